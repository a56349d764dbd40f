"""The live output tap's own logic, on a stream that is a queue: pieces keep their offsets,
what arrived while a reader was busy comes joined, a reader that falls too far behind is
dropped (what it holds is still read) and never holds the tap up, a clean end is told apart
from an engine error, and a tap leaves its registry once it is over."""

from __future__ import annotations

import asyncio

import pytest

from sandlot.domain.errors import SandboxStateError
from sandlot.services.output_taps import Drained, OutputTaps, TapReader


class Stream:
    """A process stream fed by the test; ``fail`` ends it with an engine error."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[int, bytes] | Exception | None] = asyncio.Queue()
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
    reader = tap.subscribe(tap.offset, 1 << 20)
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


async def test_a_late_reader_starts_from_the_history_and_an_earlier_one_from_the_edge() -> None:
    stream = Stream()
    tap = OutputTaps(keep=8).add("prc_5", stream, b"abcd")
    for piece in (b"efgh", b"ijkl"):
        stream.queue.put_nowait((1, piece))
    await settle()
    late = tap.subscribe(6, 100)  # kept: "efgh", "ijkl" (8 bytes); 6 is inside "efgh"
    assert late.start == 6 and await late.next(100) == (6, b"ghijkl")
    early = tap.subscribe(2, 100)  # "abcd" is no longer kept: the stored output has it
    assert early.start == 12
    stream.queue.put_nowait((1, b"mn"))
    await settle()
    assert await early.next(100) == (12, b"mn") and await late.next(100) == (12, b"mn")


async def test_every_tap_keeps_history_within_one_budget() -> None:
    taps = OutputTaps(keep=100, budget=10)
    first, second = Stream(), Stream()
    one = taps.add("prc_6", first, b"0123456789")
    two = taps.add("prc_7", second, b"abcdef")  # over the budget: it keeps what fits, nothing
    assert one.subscribe(0, 100).start == 0
    assert two.subscribe(0, 100).start == 6


async def test_a_joined_read_never_passes_its_limit() -> None:
    reader = TapReader(0, 1 << 20)
    for i in range(4):
        reader.put(i * 3, b"abc")
    assert await reader.next(7) == (0, b"abcabc")
    assert await reader.next(7) == (6, b"abcabc")


async def test_a_slow_reader_paces_the_tap_and_one_that_stops_is_dropped() -> None:
    stream = Stream()
    tap = OutputTaps().add("prc_2", stream, b"")
    tap._stall = 0.3  # a reader that reads nothing for 0.3 s is let go
    slow, quick = tap.subscribe(0, 10), tap.subscribe(0, 1 << 20)
    for _ in range(5):
        stream.queue.put_nowait((1, b"0123"))
    await settle()
    assert tap.offset == 12  # full after three pieces: the tap waits for it
    assert await slow.next(8) == (0, b"01230123")  # reading makes room
    await settle()
    assert tap.offset == 20 and not slow.overflowed
    stream.queue.put_nowait((1, b"4567"))  # now it reads no more
    await asyncio.sleep(0.5)
    assert slow.overflowed and slow.closed and tap.offset == 24
    assert await slow.next(100) is None  # it let go of what it held: it joins again from 8
    assert not quick.overflowed and await quick.next(100) == (0, b"0123" * 5 + b"4567")


async def test_an_engine_error_ends_the_tap_without_completing_it() -> None:
    stream = Stream()
    tap = OutputTaps().add("prc_3", stream, b"x")
    reader = tap.subscribe(1, 100)
    stream.queue.put_nowait(SandboxStateError("the connection to the sandbox is gone"))
    await settle()
    assert tap.over and not tap.complete
    assert await reader.next(100) is None
    late = tap.subscribe(0, 100)
    assert late.closed and late.start == 1


async def test_a_relay_past_its_cap_is_read_no_further() -> None:
    """The sandbox user can write into the relay: what passes the cap is left unread, and
    readers go to the stored output (the tap ends without completing)."""
    stream = Stream()
    tap = OutputTaps().add("prc_8", stream, b"", cap=10)
    reader = tap.subscribe(0, 100)
    for _ in range(4):
        stream.queue.put_nowait((1, b"0123"))
    await settle()
    assert tap.over and not tap.complete and tap.offset == 12 and stream.closed
    assert await reader.next(100) == (0, b"0123" * 3) and await reader.next(100) is None
    assert stream.queue.qsize() == 1  # never read


async def test_taps_are_bounded_per_session_and_in_all() -> None:
    taps = OutputTaps(per_session=2, most=3)
    for i, session in enumerate(("a", "a", "b")):
        assert taps.has_room(session)
        taps.add(f"prc_{i}", Stream(), b"", session_id=session)
    assert not taps.has_room("a") and not taps.has_room("c")  # two for a; three in all
    await taps.close_all()
    assert taps.has_room("a")


async def test_closing_every_tap_stops_reading() -> None:
    taps, stream = OutputTaps(), Stream()
    tap = taps.add("prc_4", stream, b"")
    await taps.close_all()
    assert tap.over and stream.closed and taps.get("prc_4") is None


async def test_a_first_line_without_an_end_is_refused_early() -> None:
    """The sandbox user can write into a start's stream before the pid line: a long line is
    taken for no pid, without reading on."""
    from sandlot.services.process_start import first_line

    stream = Stream()
    for _ in range(1000):
        stream.queue.put_nowait((1, b"x" * 1024))
    assert await first_line(stream) == (b"!garbled", b"")
    assert stream.queue.qsize() == 999
    stream = Stream()
    stream.queue.put_nowait((2, b"an error first"))
    stream.queue.put_nowait((1, b"123\nout"))
    assert await first_line(stream) == (b"123", b"out")


async def test_a_drained_follower_raises_any_error_after_what_came_before_it() -> None:
    stream = Stream()
    drained = Drained(stream, limit=1 << 20)
    stream.queue.put_nowait((1, b"before "))
    stream.queue.put_nowait(RuntimeError("the stream broke"))
    got = []
    with pytest.raises(RuntimeError, match="the stream broke"):  # not a quiet early end
        async for piece in drained.pieces(1 << 20):
            got.append(piece)
    assert got == [b"before "] and stream.closed


async def test_a_drained_follower_whose_reader_stops_is_dropped_and_closed() -> None:
    stream = Stream()
    drained = Drained(stream, limit=4, stall=0.05)
    stream.queue.put_nowait((1, b"abcdef"))  # more than the reader's room, and nobody reads
    for _ in range(100):
        if stream.closed:
            break
        await asyncio.sleep(0.01)
    assert drained.dropped and stream.closed  # the exec is let go: it holds up nothing
    await drained.close()
