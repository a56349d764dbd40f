"""Live output of the background processes this API process started.

On a runtime that relays output (Docker), a process's start exec stays attached: after the pid
line it carries every byte the process's ``tee`` writes to its output file, in order, right
after it reached the file (``PROC_START``'s LIVE). An :class:`OutputTap` reads that stream from
the start on, counting offsets from 0, and hands each piece to its readers as it arrives: a
WebSocket reader gets the output as it is produced, without a follower in the sandbox and
without a polled file. The tap keeps the last pieces (``history``, within a budget shared by
every tap of the process), so a reader that joins a little late, or comes back after a drop,
starts from memory. A live reader paces the process, as a terminal does (the tap waits while a
reader holds 8 MiB it has not read), but one that stops reading for 2 s is dropped: it joins
again, or catches up from the stored output, and the process goes on. Readers served by another
API process, or after a restart, follow the stored file (:mod:`sandlot.runtime.process_scripts`'
``PROC_FOLLOW``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable

from sandlot.domain.errors import SandlotError
from sandlot.runtime.base import ProcessStream

__all__ = ["Budget", "Drained", "OutputTap", "OutputTaps", "TapReader"]

log = logging.getLogger(__name__)


class TapReader:
    """One reader's share of a tap: the pieces relayed since it subscribed (the first at
    ``start``). Holding ``limit`` bytes or more it is ``full``: the tap waits for it to read
    (the process is paced by its slowest live reader, as by a terminal), at most ``stall``
    seconds at a time; a reader still full then is dropped (``overflowed``): what it holds is
    still read, then it goes back to the stored output."""

    def __init__(
        self,
        start: int,
        limit: int,
        pieces: list[tuple[int, bytes]] | None = None,
        on_room: Callable[[], object] | None = None,
    ) -> None:
        self.start = start
        self.closed = False
        self.overflowed = False
        self._pieces: deque[tuple[int, bytes]] = deque(pieces or ())
        self._held = sum(len(data) for _, data in self._pieces)
        self._limit = limit
        self._wake = asyncio.Event()
        self._on_room = on_room

    @property
    def full(self) -> bool:
        return not self.closed and self._held >= self._limit

    def put(self, at: int, data: bytes) -> None:
        """Hold ``data`` (at offset ``at``), unless this reader is closed."""
        if self.closed:
            return
        self._pieces.append((at, data))
        self._held += len(data)
        self._wake.set()

    def drop(self) -> None:
        """Let go of what it holds (the caller joins again from where it is) and close."""
        self.overflowed = True
        self._pieces.clear()
        self._held = 0
        self.close()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def next(self, most: int, linger: float = 0.0) -> tuple[int, bytes] | None:
        """The next bytes and their offset: what arrived while the caller was busy comes
        joined, up to ``most`` bytes. With ``linger``, a first piece under half of ``most``
        waits that long for more to join it (fewer, larger frames for a stream that comes in
        many small pieces, at that much latency). None once closed and read out."""
        while not self._pieces:
            if self.closed:
                return None
            self._wake.clear()
            await self._wake.wait()
        if linger and not self.closed and self._held < most // 2:
            await asyncio.sleep(linger)
        at, first = self._pieces.popleft()
        parts, size = [first], len(first)
        while self._pieces and size + len(self._pieces[0][1]) <= most:
            data = self._pieces.popleft()[1]
            parts.append(data)
            size += len(data)
        self._held -= size
        if self._on_room is not None and self._held < self._limit:
            self._on_room()
        return at, first if len(parts) == 1 else b"".join(parts)


class Budget:
    """Bytes of history every tap of this process may keep, together."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.used = 0


class OutputTap:
    """The relayed output of one process, from offset 0, and its last pieces (at most
    ``keep`` bytes, and only while the shared budget allows). ``complete`` once the relay ended
    cleanly (the process is then over, unless someone in the sandbox killed the relay: readers
    look before they trust it); an engine error ends it without ``complete``, and so does a
    relay that carries more than ``cap`` bytes (the sandbox user can write into the stream:
    past what the process may keep, it is not read any further)."""

    def __init__(
        self,
        stream: ProcessStream,
        first: bytes,
        on_over: Callable[[], object],
        keep: int,
        budget: Budget,
        cap: int,
        stall: float = 2.0,
    ) -> None:
        self.offset = 0
        self._cap = cap
        self.over = False
        self.complete = False
        self._readers: set[TapReader] = set()
        self._stream = stream
        self._history: deque[tuple[int, bytes]] = deque()
        self._kept = 0
        self._keep = keep
        self._budget = budget
        self._stall = stall
        self._room = asyncio.Event()
        self._push(first)
        self._task = asyncio.ensure_future(self._pump())
        self._task.add_done_callback(lambda _: on_over())

    def subscribe(self, pos: int, limit: int) -> TapReader:
        """A reader from ``pos`` when the history reaches back that far (its pieces given at
        once), else from the live edge (``start`` > ``pos``: the rest is the caller's to find)."""
        pieces: list[tuple[int, bytes]] = []
        start = self.offset
        if self._history and self._history[0][0] <= pos <= self.offset:
            start = pos
            for at, data in self._history:
                if at + len(data) > pos:
                    pieces.append((pos, data[pos - at :]) if at < pos else (at, data))
        reader = TapReader(start, limit, pieces, self._room.set)
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
        for reader in self._readers:
            reader.put(at, data)
        self._history.append((at, data))
        self._kept += len(data)
        self._budget.used += len(data)
        while self._history and (self._kept > self._keep or self._budget.used > self._budget.total):
            self._forget()

    async def _paced(self) -> None:
        """Wait while a reader is full (it holds ``limit`` bytes), at most ``stall`` seconds;
        then drop the readers still full."""
        if not any(reader.full for reader in self._readers):
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._stall):
                while any(reader.full for reader in self._readers):
                    self._room.clear()
                    await self._room.wait()
        for reader in [r for r in self._readers if r.full]:
            reader.drop()
            self._readers.discard(reader)

    def _forget(self) -> None:
        size = len(self._history.popleft()[1])
        self._kept -= size
        self._budget.used -= size

    async def _pump(self) -> None:
        try:
            while (chunk := await self._stream.read()) is not None:
                if chunk[0] == 1:
                    self._push(chunk[1])
                    if self.offset > self._cap:
                        log.info("a process's relayed output passed its cap; readers read it stored")
                        return
                    await self._paced()
            self.complete = True
        except SandlotError as exc:
            log.info("a process's live output ended early: %s", exc)
        finally:
            await self._end()

    async def _end(self) -> None:
        self.over = True
        while self._history:  # its output is stored whole: readers from now on read that
            self._forget()
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


class Drained:
    """The output of an exec whose reader may stop reading (a follower of a process's stored
    output): read as it comes, into at most ``limit`` bytes held for the reader; a reader that
    leaves it full for ``stall`` seconds is dropped (``dropped``: it follows again from where
    it is) and the exec closed. Left unread, such an exec held up its whole sandbox: Docker
    (20.10) handles a container's events one at a time, and the end of an exec whose output
    was not read out waits for its reader, so every later exec of the sandbox (a status, a
    read, a command) waited with it."""

    def __init__(self, stream: ProcessStream, limit: int, stall: float = 2.0) -> None:
        self._stream = stream
        self._stall = stall
        self._room = asyncio.Event()
        self._reader = TapReader(0, limit, on_room=self._room.set)
        self._error: Exception | None = None
        self._task = asyncio.ensure_future(self._pump())

    @property
    def dropped(self) -> bool:
        return self._reader.overflowed

    async def _pump(self) -> None:
        offset = 0
        try:
            while (chunk := await self._stream.read()) is not None:
                if chunk[0] != 1 or not chunk[1]:
                    continue
                self._reader.put(offset, chunk[1])
                offset += len(chunk[1])
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._stall):
                        while self._reader.full:
                            self._room.clear()
                            await self._room.wait()
                if self._reader.full:
                    self._reader.drop()
                    return
        except Exception as exc:  # raised to the reader after what came: never a quiet early end
            self._error = exc
        finally:
            self._reader.close()
            with contextlib.suppress(Exception):
                await self._stream.close()

    async def pieces(self, most: int) -> AsyncIterator[bytes]:
        """What came, joined up to ``most`` bytes a piece, until the exec ends or the reader
        is dropped; an error of the stream is raised after what came before it."""
        while (got := await self._reader.next(most)) is not None:
            yield got[1]
        if self._error is not None:
            raise self._error

    async def close(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        with contextlib.suppress(Exception):
            await self._stream.close()


class OutputTaps:
    """This process's taps by process id; a tap leaves once its process is over. Each keeps
    at most ``keep`` bytes of history, all of them together at most ``budget``; at most
    ``per_session`` taps a session and ``most`` in all (each holds an exec stream open for its
    process's life: past that, processes start without one)."""

    def __init__(
        self, keep: int = 8 << 20, budget: int = 64 << 20, per_session: int = 16, most: int = 256
    ) -> None:
        self._taps: dict[str, tuple[str, OutputTap]] = {}
        self._keep = keep
        self._budget = Budget(budget)
        self._per_session = per_session
        self._most = most

    def has_room(self, session_id: str) -> bool:
        mine = sum(1 for owner, _ in self._taps.values() if owner == session_id)
        return len(self._taps) < self._most and mine < self._per_session

    def add(
        self,
        process_id: str,
        stream: ProcessStream,
        first: bytes,
        *,
        session_id: str = "",
        cap: int = 1 << 62,
    ) -> OutputTap:
        tap = OutputTap(
            stream, first, lambda: self._taps.pop(process_id, None), self._keep, self._budget, cap
        )
        self._taps[process_id] = (session_id, tap)
        return tap

    def get(self, process_id: str) -> OutputTap | None:
        found = self._taps.get(process_id)
        return found[1] if found else None

    async def close_all(self) -> None:
        """At shutdown: stop reading (the engine drops what the relays write from then on; the
        processes go on, their output kept in the sandbox)."""
        taps, self._taps = [tap for _, tap in self._taps.values()], {}
        for tap in taps:
            await tap.close()
