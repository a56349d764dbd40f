"""Concurrent lookups of one key share one load; nothing is kept once it ends."""

from __future__ import annotations

import asyncio

import pytest

from sandlot.services.coalesce import Coalesced


async def test_concurrent_lookups_of_one_key_share_one_load() -> None:
    loads = 0
    gate = asyncio.Event()

    async def load() -> int:
        nonlocal loads
        loads += 1
        await gate.wait()
        return 7

    shared: Coalesced[str, int] = Coalesced()
    waiting = [asyncio.create_task(shared.get("k", load)) for _ in range(20)]
    other = asyncio.create_task(shared.get("other", load))
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting, other) == [7] * 21
    assert loads == 2  # one per key
    assert await shared.get("k", load) == 7
    assert loads == 3  # the first lookup ended: the next one loads again


async def test_a_failed_lookup_fails_every_waiter_and_the_next_one_retries() -> None:
    calls = 0

    async def load() -> int:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        if calls == 1:
            raise LookupError("gone")
        return 1

    shared: Coalesced[str, int] = Coalesced()
    results = await asyncio.gather(*(shared.get("k", load) for _ in range(5)), return_exceptions=True)
    assert all(isinstance(r, LookupError) for r in results)
    assert await shared.get("k", load) == 1


async def test_a_cancelled_waiter_leaves_the_lookup_to_the_others() -> None:
    async def load() -> str:
        await asyncio.sleep(0.05)
        return "row"

    shared: Coalesced[str, str] = Coalesced()
    first = asyncio.create_task(shared.get("k", load))
    second = asyncio.create_task(shared.get("k", load))
    await asyncio.sleep(0.01)
    first.cancel()
    assert await second == "row"
    with pytest.raises(asyncio.CancelledError):
        await first


async def test_after_forget_a_new_lookup_does_not_join_one_under_way() -> None:
    gate = asyncio.Event()
    values = iter(["before", "after"])

    async def load() -> str:
        value = next(values)
        if value == "before":
            await gate.wait()
        return value

    shared: Coalesced[str, str] = Coalesced()
    old = asyncio.create_task(shared.get("k", load))
    await asyncio.sleep(0)
    shared.forget()
    assert await shared.get("k", load) == "after"
    gate.set()
    assert await old == "before"
