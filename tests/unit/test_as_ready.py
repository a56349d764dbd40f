"""``bridge.as_ready``: what arrived while the consumer was busy goes out joined, in order and
bounded; a trickle goes out chunk by chunk; an error comes after what preceded it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from sandlot.runtime.bridge import as_ready


async def test_chunks_that_arrived_while_the_consumer_was_busy_go_out_joined_in_order() -> None:
    async def burst() -> AsyncIterator[bytes]:
        for i in range(100):
            yield b"%d," % i

    out = []
    async for piece in as_ready(burst(), size=60):
        out.append(piece)
        await asyncio.sleep(0.01)  # busy sending: the rest piles up meanwhile
    assert b"".join(out) == b"".join(b"%d," % i for i in range(100))
    assert 1 < len(out) < 100 and all(len(p) <= 60 + 3 for p in out)  # joined, at most about size


async def test_a_trickle_goes_out_as_it_comes() -> None:
    gate = asyncio.Event()

    async def trickle() -> AsyncIterator[bytes]:
        yield b"first"
        await gate.wait()
        yield b"second"

    pieces = as_ready(trickle())
    assert await asyncio.wait_for(anext(pieces), 1) == b"first"  # not held back for more
    gate.set()
    assert await anext(pieces) == b"second"
    with pytest.raises(StopAsyncIteration):
        await anext(pieces)


async def test_reading_ahead_is_bounded() -> None:
    read = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal read
        while True:
            read += 1
            yield b"x"

    pieces = as_ready(endless(), size=1, depth=8)
    await anext(pieces)
    await asyncio.sleep(0.05)  # the consumer stops taking
    assert read <= 8 + 3
    await pieces.aclose()


async def test_an_error_comes_after_the_bytes_before_it() -> None:
    async def failing() -> AsyncIterator[bytes]:
        yield b"a"
        yield b"b"
        raise ConnectionError("engine gone")

    got = bytearray()
    with pytest.raises(ConnectionError):
        async for piece in as_ready(failing()):
            got += piece
    assert got == b"ab"
