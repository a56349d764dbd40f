"""Byte streams between the event loop and a worker thread, bounded both ways.

Archives are parsed and rewritten with :mod:`tarfile`, which blocks; a workspace of gigabytes
must still never sit in the server's memory. So the blocking work runs in its own thread and
sees the async side as ordinary file objects, through :class:`Pipe`, a queue of at most
``depth`` chunks: a fast producer waits for a slow consumer instead of piling bytes up.

Each piece of work gets a dedicated thread (not the default executor): a transfer can last
minutes, and a handful of them must not starve the short ``to_thread`` calls elsewhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import queue
import threading
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import IO, Any, TypeVar

__all__ = [
    "BULK",
    "CHUNK",
    "Pipe",
    "as_ready",
    "consume",
    "gathered",
    "one_chunk",
    "produce",
    "run_blocking",
    "tee",
    "transform",
]

T = TypeVar("T")
U = TypeVar("U")

CHUNK = 1 << 16
BULK = 1 << 20  # a piece of a bulk transfer (see gathered)
_FEED = 1 << 18  # what a thread reading a stream is handed at a time, at most 8 pieces ahead
_END = object()
_WAKE = 0.2  # how often a blocked thread looks whether the other side gave up


class _Abandoned(BrokenPipeError):
    """The event-loop side of a pipe went away (the client disconnected, or a failure)."""


class Pipe:
    """A bounded queue of chunks with a blocking side (a thread) and an async side.

    Items are ``bytes``, an exception (raised on the other side) or the end marker.
    """

    def __init__(self, depth: int = 8) -> None:
        self._queue: queue.Queue[Any] = queue.Queue(depth)
        self._loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self.abandoned = False

    # -- thread side ------------------------------------------------------------------------

    def _notify(self) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closing
            self._loop.call_soon_threadsafe(self._changed.set)

    def put(self, item: Any) -> None:
        while True:
            if self.abandoned:
                raise _Abandoned("the reading side is gone")
            try:
                self._queue.put(item, timeout=_WAKE)
                break
            except queue.Full:
                continue
        self._notify()

    def get(self) -> Any:
        while True:
            if self.abandoned:
                raise _Abandoned("the writing side is gone")
            try:
                item = self._queue.get(timeout=_WAKE)
                break
            except queue.Empty:
                continue
        self._notify()
        return item

    # -- event-loop side --------------------------------------------------------------------

    async def aput(self, item: Any, *, unless: asyncio.Future[Any] | None = None) -> bool:
        """Queue ``item``; False (not queued) if ``unless`` finished first."""
        while True:
            try:
                self._queue.put_nowait(item)
                return True
            except queue.Full:
                self._changed.clear()
                if self._queue.full():
                    if unless is not None and unless.done():
                        return False
                    await self._wait(unless)

    async def aget(self) -> Any:
        while True:
            try:
                return self._queue.get_nowait()
            except queue.Empty:
                self._changed.clear()
                if self._queue.empty():
                    await self._changed.wait()

    async def _wait(self, unless: asyncio.Future[Any] | None) -> None:
        if unless is None:
            await self._changed.wait()
            return
        waiter = asyncio.ensure_future(self._changed.wait())
        try:
            await asyncio.wait({waiter, unless}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    def abandon(self) -> None:
        self.abandoned = True


class _Reader(io.RawIOBase):
    """The thread's view of an input pipe."""

    def __init__(self, pipe: Pipe) -> None:
        self._pipe = pipe
        self._buf = b""
        self._eof = False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        if not self._buf and not self._eof:
            item = self._pipe.get()
            if item is _END:
                self._eof = True
            elif isinstance(item, BaseException):
                raise item
            else:
                self._buf = item
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


class _Writer(io.RawIOBase):
    """The thread's view of an output pipe."""

    def __init__(self, pipe: Pipe) -> None:
        self._pipe = pipe

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        data = bytes(b)
        if data:
            self._pipe.put(data)
        return len(data)


async def run_blocking(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in a new daemon thread; its result or exception comes back here."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def target() -> None:
        try:
            result = fn(*args)
        except BaseException as exc:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, None, exc)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=target, name="sandlot-blocking", daemon=True).start()
    return await done


async def gathered(chunks: AsyncIterable[bytes], size: int = BULK) -> AsyncIterator[bytes]:
    """``chunks`` joined into pieces of about ``size`` bytes (the last may be smaller): bulk
    transfers in few large pieces, each of which costs a hand-over between a thread and the
    event loop, or a write into a container, rather than many small ones."""
    pending: list[bytes] = []
    held = 0
    async for chunk in chunks:
        pending.append(chunk)
        held += len(chunk)
        if held >= size:
            yield b"".join(pending)
            pending, held = [], 0
    if held:
        yield b"".join(pending)


async def as_ready(chunks: AsyncIterable[bytes], size: int = BULK, depth: int = 64) -> AsyncIterator[bytes]:
    """``chunks`` as they come, except that what arrived while the consumer was busy goes out
    joined (up to about ``size`` bytes): a slow trickle keeps the latency of one chunk, a fast
    stream goes out in few large pieces (a WebSocket frame costs the same for 30 bytes as for
    30 KiB). At most ``depth`` chunks are read ahead. An error of ``chunks`` is raised after
    what came before it was yielded."""
    ahead: asyncio.Queue[Any] = asyncio.Queue(depth)

    async def read() -> None:
        try:
            async for chunk in chunks:
                await ahead.put(chunk)
            await ahead.put(_END)
        except Exception as exc:
            await ahead.put(exc)

    reader = asyncio.ensure_future(read())
    try:
        item = await ahead.get()
        while item is not _END:
            pending: list[bytes] = []
            held = 0
            while isinstance(item, bytes):
                pending.append(item)
                held += len(item)
                if held >= size or ahead.empty():
                    item = None
                    break
                item = ahead.get_nowait()
            if pending:
                yield b"".join(pending)
            if isinstance(item, Exception):
                raise item
            item = await ahead.get() if item is None else item
    finally:
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader


async def _feed(source: AsyncIterable[bytes], pipe: Pipe, work: asyncio.Future[Any]) -> None:
    """Copy ``source`` into ``pipe`` until it ends or the work stops reading."""
    try:
        async for chunk in gathered(source, _FEED):
            if chunk and not await pipe.aput(chunk, unless=work):
                return
        await pipe.aput(_END, unless=work)
    except Exception as exc:
        await pipe.aput(exc, unless=work)


async def consume(source: AsyncIterable[bytes], fn: Callable[[IO[bytes]], T]) -> T:
    """Run ``fn`` in a thread on a file object that reads ``source``; returns its result.
    An error raised by ``source`` is raised inside ``fn``'s reads (and so comes back here)."""
    pipe = Pipe()
    reader = io.BufferedReader(_Reader(pipe), CHUNK)
    work = asyncio.ensure_future(run_blocking(fn, reader))
    try:
        await _feed(source, pipe, work)
        return await work
    finally:
        pipe.abandon()


async def produce(fn: Callable[[IO[bytes]], Any], *, piece: int = CHUNK) -> AsyncIterator[bytes]:
    """The bytes ``fn`` writes (in a thread) to the file object it is given, in pieces of
    about ``piece`` bytes. Stopping the iteration early makes ``fn``'s next write fail, which
    ends the thread."""
    pipe = Pipe()

    def run() -> None:
        writer = io.BufferedWriter(_Writer(pipe), piece)
        try:
            fn(writer)
            writer.flush()
        except BaseException as exc:
            if not isinstance(exc, _Abandoned):
                with contextlib.suppress(_Abandoned):
                    pipe.put(exc)
            return
        with contextlib.suppress(_Abandoned):
            pipe.put(_END)

    work = asyncio.ensure_future(run_blocking(run))
    try:
        while True:
            item = await pipe.aget()
            if item is _END:
                break
            if isinstance(item, BaseException):
                raise item
            yield item
        await work
    finally:
        pipe.abandon()


async def transform(
    source: AsyncIterable[bytes], fn: Callable[[IO[bytes], IO[bytes]], Any]
) -> AsyncIterator[bytes]:
    """``fn(reader, writer)`` in a thread between ``source`` and the iteration: what it
    writes is yielded as it is written."""
    inbound = Pipe()
    reader = io.BufferedReader(_Reader(inbound), CHUNK)
    stopped: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    feeder = asyncio.ensure_future(_feed(source, inbound, stopped))
    try:
        async for chunk in produce(lambda writer: fn(reader, writer)):
            yield chunk
    finally:
        stopped.set_result(None)
        inbound.abandon()
        feeder.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await feeder


async def tee(
    source: AsyncIterable[bytes],
    first: Callable[[AsyncIterator[bytes]], Awaitable[T]],
    second: Callable[[AsyncIterator[bytes]], Awaitable[U]],
) -> tuple[T, U]:
    """Give the same chunks to two consumers at once (e.g. a blob store and a check of the
    archive), at the pace of the slower; either failing fails both, and the error goes on."""
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=8)

    async def for_second() -> AsyncIterator[bytes]:
        while (chunk := await queue.get()) is not None:
            yield chunk

    async def offer(item: bytes | None) -> None:
        if later.done():  # it ended early (failed): its error is raised below
            return
        put = asyncio.ensure_future(queue.put(item))
        await asyncio.wait({put, later}, return_when=asyncio.FIRST_COMPLETED)
        put.cancel()

    async def for_first() -> AsyncIterator[bytes]:
        async for chunk in source:
            await offer(chunk)
            yield chunk
        await offer(None)

    later = asyncio.ensure_future(second(for_second()))
    try:
        result = await first(for_first())
        return result, await later
    except BaseException:
        later.cancel()
        with contextlib.suppress(BaseException):
            await later
        raise


async def one_chunk(data: bytes) -> AsyncIterator[bytes]:
    """``data`` as a stream (bytes already in memory, given where a stream is taken)."""
    yield data
