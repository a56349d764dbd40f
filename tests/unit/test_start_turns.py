"""Process starts of one tenant take turns (each holds one of a few lock connections while it
runs): a tenant whose starts stall waits for its own, never takes the others' turns."""

from __future__ import annotations

import asyncio

import pytest

from sandlot.domain.errors import Busy
from sandlot.services.process_start import StartTurns


async def test_a_tenants_stalled_starts_hold_up_only_its_own() -> None:
    turns = StartTurns(at_once=2, wait=0.2)
    release = asyncio.Event()

    async def stalled() -> None:
        async with turns.turn("ten_a"):
            await release.wait()

    held = [asyncio.ensure_future(stalled()) for _ in range(2)]
    await asyncio.sleep(0.01)
    async with turns.turn("ten_b"):  # another tenant goes at once
        pass
    with pytest.raises(Busy):  # the first tenant's third start waits, then gives up
        async with turns.turn("ten_a"):
            pass
    release.set()
    await asyncio.gather(*held)
    async with turns.turn("ten_a"):  # its turn again
        pass
    assert not len(turns._turns)  # nothing kept for tenants with no start under way
