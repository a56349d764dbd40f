"""The live output tap's own logic, on a stream that is a queue: pieces keep their offsets,
what arrived while a reader was busy comes joined, a reader that falls too far behind is
dropped (what it holds is still read) and never holds the tap up, a clean end is told apart
from an engine error, and a tap leaves its registry once it is over."""

from __future__ import annotations

import asyncio

from sandlot.domain.errors import SandboxStateError
from sandlot.services.output_taps import OutputTaps, TapReader


class Stream:
    """A process stream fed by the test; ``fail`` ends it with an engine error."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[int, bytes] | None | Exception] = asyncio.Queue()
        self.closed = False

    async def read(self) -> tuple[int, bytes] | None:
        item = await self.queue.get()
        if isinstance(item, Exception):
            raise item
        return item

    async def write(self, data: bytes) -> None:
        raise AssertionError("a tap never writes")

    async def close(self) -> None:
        self.closed = True


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_pieces_keep_their_offsets_and_come_joined_when_the_reader_was_busy() -> None:
    taps, stream = OutputTaps(), Stream()
    tap = taps.add("prc_1", stream, b"hello ")
    reader = tap.subscribe(1 << 20)
    assert reader.start == 6  # what came before it is the stored output's to give
    for piece in (b"wor", b"ld", b"!"):
        stream.queue.put_nowait((1, piece))
    stream.queue.put_nowait((2, b"stderr of the relay is not output"))
    await settle()
    assert await reader.next(4) == (6, b"wor")  # at most 4 bytes: "ld" waits
    assert await reader.next(1 << 20) == (9, b"ld!")
    stream.queue.put_nowait(None)
    await settle()
    assert await reader.next(1 << 20) is None
    assert tap.complete and tap.offset == 12 and stream.closed
    assert taps.get("prc_1") is None  # over: readers go to the stored output


async def test_a_joined_read_never_passes_its_limit() -> None:
    reader = TapReader(0, 1 << 20)
    for i in range(4):
        reader.put(i * 3, b"abc")
    assert await reader.next(7) == (0, b"abcabc")
    assert await reader.next(7) == (6, b"abcabc")


async def test_a_reader_that_falls_behind_is_dropped_and_never_holds_the_tap() -> None:
    stream = Stream()
    tap = OutputTaps().add("prc_2", stream, b"")
    slow, quick = tap.subscribe(10), tap.subscribe(1 << 20)
    for _ in range(5):
        stream.queue.put_nowait((1, b"0123"))
    await settle()
    assert tap.offset == 20  # the tap read on
    assert slow.overflowed and slow.closed
    held = []
    while (got := await slow.next(100)) is not None:
        held.append(got)
    assert held == [(0, b"0123" * 3)]  # what it held when it was dropped, then the end
    assert not quick.overflowed and await quick.next(100) == (0, b"0123" * 5)


async def test_an_engine_error_ends_the_tap_without_completing_it() -> None:
    stream = Stream()
    tap = OutputTaps().add("prc_3", stream, b"x")
    reader = tap.subscribe(100)
    stream.queue.put_nowait(SandboxStateError("the connection to the sandbox is gone"))
    await settle()
    assert tap.over and not tap.complete
    assert await reader.next(100) is None
    late = tap.subscribe(100)
    assert late.closed and late.start == 1


async def test_closing_every_tap_stops_reading() -> None:
    taps, stream = OutputTaps(), Stream()
    tap = taps.add("prc_4", stream, b"")
    await taps.close_all()
    assert tap.over and stream.closed and taps.get("prc_4") is None
