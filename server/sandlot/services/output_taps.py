"""Live output of the background processes this API process started.

On a runtime that relays output (Docker), a process's start exec stays attached: after the pid
line it carries every byte the process's ``tee`` writes to its output file, in order, right
after it reached the file (``PROC_START``'s LIVE). An :class:`OutputTap` reads that stream from
the start on, counting offsets from 0, and hands each piece to its readers as it arrives: a
WebSocket reader gets the output as it is produced, without a follower in the sandbox and
without a polled file. A reader that falls behind by more than it may hold is dropped and
catches up from the stored output; the tap never waits for a reader, so a slow one never slows
the process. Readers served by another API process, or after a restart, follow the stored file
(:mod:`sandlot.runtime.process_scripts`' ``PROC_FOLLOW``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable

from sandlot.domain.errors import SandlotError
from sandlot.runtime.base import ProcessStream

__all__ = ["OutputTap", "OutputTaps", "TapReader"]

log = logging.getLogger(__name__)


class TapReader:
    """One reader's share of a tap: the pieces relayed since it subscribed (the first at
    ``start``), at most ``limit`` bytes held. Past that it is dropped (``overflowed``): what it
    holds is still read, then it goes back to the stored output."""

    def __init__(self, start: int, limit: int) -> None:
        self.start = start
        self.closed = False
        self.overflowed = False
        self._pieces: deque[tuple[int, bytes]] = deque()
        self._held = 0
        self._limit = limit
        self._wake = asyncio.Event()

    def put(self, at: int, data: bytes) -> bool:
        """Hold ``data`` (at offset ``at``); False once this reader is dropped or closed."""
        if self.closed:
            return False
        self._pieces.append((at, data))
        self._held += len(data)
        if self._held > self._limit:
            self.overflowed = True
            self.close()
            return False
        self._wake.set()
        return True

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def next(self, most: int) -> tuple[int, bytes] | None:
        """The next bytes and their offset: what arrived while the caller was busy comes
        joined, up to ``most`` bytes. None once closed and read out."""
        while not self._pieces:
            if self.closed:
                return None
            self._wake.clear()
            await self._wake.wait()
        at, first = self._pieces.popleft()
        parts, size = [first], len(first)
        while self._pieces and size + len(self._pieces[0][1]) <= most:
            data = self._pieces.popleft()[1]
            parts.append(data)
            size += len(data)
        self._held -= size
        return at, first if len(parts) == 1 else b"".join(parts)


class OutputTap:
    """The relayed output of one process, from offset 0. ``complete`` once the relay ended
    cleanly (the process is then over, unless someone in the sandbox killed the relay: readers
    look before they trust it); an engine error ends it without ``complete``."""

    def __init__(self, stream: ProcessStream, first: bytes, on_over: Callable[[], object]) -> None:
        self.offset = 0
        self.over = False
        self.complete = False
        self._readers: set[TapReader] = set()
        self._stream = stream
        self._push(first)
        self._task = asyncio.ensure_future(self._pump())
        self._task.add_done_callback(lambda _: on_over())

    def subscribe(self, limit: int) -> TapReader:
        reader = TapReader(self.offset, limit)
        if self.over:
            reader.close()
        else:
            self._readers.add(reader)
        return reader

    def unsubscribe(self, reader: TapReader) -> None:
        self._readers.discard(reader)

    def _push(self, data: bytes) -> None:
        if not data:
            return
        at = self.offset
        self.offset += len(data)
        for reader in list(self._readers):
            if not reader.put(at, data):
                self._readers.discard(reader)

    async def _pump(self) -> None:
        try:
            while (chunk := await self._stream.read()) is not None:
                if chunk[0] == 1:
                    self._push(chunk[1])
            self.complete = True
        except SandlotError as exc:
            log.info("a process's live output ended early: %s", exc)
        finally:
            await self._end()

    async def _end(self) -> None:
        self.over = True
        for reader in self._readers:
            reader.close()
        self._readers.clear()
        with contextlib.suppress(Exception):
            await self._stream.close()

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self._end()  # also when the task was cancelled before it ever ran


class OutputTaps:
    """This process's taps by process id; a tap leaves once its process is over."""

    def __init__(self) -> None:
        self._taps: dict[str, OutputTap] = {}

    def add(self, process_id: str, stream: ProcessStream, first: bytes) -> OutputTap:
        tap = OutputTap(stream, first, lambda: self._taps.pop(process_id, None))
        self._taps[process_id] = tap
        return tap

    def get(self, process_id: str) -> OutputTap | None:
        return self._taps.get(process_id)

    async def close_all(self) -> None:
        """At shutdown: stop reading (the engine drops what the relays write from then on; the
        processes go on, their output kept in the sandbox)."""
        taps, self._taps = list(self._taps.values()), {}
        for tap in taps:
            await tap.close()
