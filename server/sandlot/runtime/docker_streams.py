"""The Docker engine's errors as ours, and the attached streams of the Docker runtime: an exec
with stdin (the persistent shell, the output followers, file transfers) and an exec with a TTY
(terminals)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator
from typing import Any

import aiodocker
import aiohttp
from aiodocker.stream import Stream

from sandlot.domain.errors import InvalidInput, RuntimeUnavailable, SandboxStateError, SandlotError
from sandlot.runtime.bridge import gathered, one_chunk

__all__ = [
    "ExecStream",
    "PtyExecStream",
    "engine",
    "engine_error",
    "feed_while_reading",
    "program_ended",
    "send_stdin",
]

log = logging.getLogger(__name__)

# aiodocker asserts its transport is there when writing; after the container died it is not
_WRITE_FAILED = (RuntimeError, OSError, AssertionError, aiohttp.ClientError, aiodocker.DockerError)
_GONE = ("no such container", "is not running", "is paused", "is restarting", "is dead", "removal")


def engine_error(exc: BaseException, what: str) -> SandlotError:
    """What a failed engine call means: the container is broken or gone
    (``SandboxStateError``, 502) or the engine does not answer (``RuntimeUnavailable``, 503)."""
    if isinstance(exc, SandlotError):
        return exc
    if isinstance(exc, aiodocker.DockerError):
        message = str(exc.message)
        too_small = "qgroup" in message.lower() or "disk quota exceeded" in message.lower()
        if what in ("create", "start") and too_small:
            # the image alone does not fit in the disk limit asked for: the caller's to change
            return InvalidInput(f"disk_mb is too small for the image ({message})", field="disk_mb")
        if exc.status in (404, 409) or any(word in message.lower() for word in _GONE):
            return SandboxStateError(f"docker {what}: the sandbox container is gone or stopped ({message})")
        if exc.status >= 500:
            return RuntimeUnavailable(f"docker {what} failed: {message}")
        return SandboxStateError(f"docker {what} failed: {message}")
    if isinstance(exc, AssertionError):  # aiodocker's stream lost its transport
        return SandboxStateError(f"docker {what}: the connection to the sandbox is gone")
    if isinstance(exc, aiohttp.ClientPayloadError) and what == "archive":
        # the engine answered, then its archive stopped: the container (a stopped one, which
        # reconciliation removes) went away while it was read
        return SandboxStateError(f"docker {what}: the sandbox's container went away while it was read")
    return RuntimeUnavailable(f"docker engine unreachable during {what}: {exc!r}")


@contextlib.contextmanager
def engine(what: str) -> Iterator[None]:
    """Turn every engine failure inside the block into :func:`engine_error`'s answer."""
    try:
        yield
    except SandlotError:
        raise
    except (TimeoutError, aiodocker.DockerError, aiohttp.ClientError, OSError, AssertionError) as exc:
        raise engine_error(exc, what) from exc


async def _write_in(stream: Stream, data: bytes, what: str) -> None:
    try:
        await stream.write_in(data)
    except _WRITE_FAILED as exc:
        raise SandboxStateError(f"{what} is gone: {exc!r}") from exc


class ExecStream:
    """:class:`~sandlot.runtime.base.ProcessStream` over an attached ``docker exec``."""

    def __init__(self, stream: Stream, first: list[tuple[int, bytes]] | None = None) -> None:
        self._stream = stream
        self._first = first or []  # output already read off the stream, to be read again

    async def write(self, data: bytes) -> None:
        await _write_in(self._stream, data, "the sandbox process")

    async def read(self) -> tuple[int, bytes] | None:
        if self._first:
            return self._first.pop(0)
        with engine("read"):
            msg = await self._stream.read_out()
        return None if msg is None else (msg.stream, msg.data)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._stream.close()


class PtyExecStream:
    """:class:`~sandlot.runtime.base.PtyStream` over a ``docker exec`` with a TTY. Closing it
    kills the terminal's whole session (``on_close``), so no shell outlives its terminal."""

    def __init__(
        self, exe: Any, stream: Stream, on_close: Callable[[], Awaitable[None]], *, initial: bytes = b""
    ) -> None:
        self._exe = exe
        self._stream = stream
        self._on_close = on_close
        self._closed = False
        self._initial = initial

    async def write(self, data: bytes) -> None:
        await _write_in(self._stream, data, "the terminal")

    async def read(self) -> bytes | None:
        if self._initial:
            data, self._initial = self._initial, b""
            return data
        with engine("terminal read"):
            msg = await self._stream.read_out()
        return None if msg is None else bytes(msg.data)

    async def resize(self, cols: int, rows: int) -> None:
        with engine("terminal resize"):
            await self._exe.resize(h=rows, w=cols)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            await self._stream.close()
        try:
            await self._on_close()
        except SandlotError as exc:
            log.info("could not kill a closed terminal's processes: %s", exc)


async def _half_close(stream: Stream) -> None:
    """Shut the write side of the hijacked connection so the command sees EOF on stdin
    (aiodocker's ``Stream.close()`` would also stop the output)."""
    resp = stream._resp
    if resp is not None and resp.connection is not None:
        transport = resp.connection.transport
        if transport is not None and transport.can_write_eof():
            transport.write_eof()


async def send_stdin(stream: Stream, data: bytes | AsyncIterable[bytes]) -> None:
    """Write ``data`` to an exec's stdin, then half-close it. A command that stopped reading
    (it exited early) ends the sending quietly: its exit code tells the rest. An error from
    ``data`` itself (a client that went away) half-closes stdin too, so the command sees a
    short input and ends, and is raised."""
    chunks = one_chunk(data) if isinstance(data, bytes) else data
    try:
        async for chunk in gathered(chunks):  # few large writes: 50 MiB in 0.55 s, not 1 s
            try:
                await stream.write_in(chunk)
            except _WRITE_FAILED as exc:
                log.debug("stdin of an exec closed early: %r", exc)
                return
    finally:
        with contextlib.suppress(*_WRITE_FAILED):
            await _half_close(stream)


async def program_ended(exe: Any) -> None:
    """Returns once the exec's program has ended: the engine keeps its streams open while stdin
    is still being sent, so a program that stopped reading (a full disk, a ``head -c 1``)
    would hold the sender until the engine gave up. Looked at only once a send lasts (a quick
    one never asks)."""
    await asyncio.sleep(1.0)
    while True:
        with contextlib.suppress(Exception):  # an engine error here is the reader's to report
            if not (await exe.inspect()).get("Running", True):
                return
        await asyncio.sleep(0.5)


async def feed_while_reading(
    exe: Any, stream: Stream, data: bytes | AsyncIterable[bytes], reading: Awaitable[None]
) -> None:
    """Send ``data`` to an exec's stdin while ``reading`` takes in its output, both at once (a
    command that writes as it reads, ``cat`` of megabytes, would otherwise fill its output pipe
    and stop reading). Returns once the output ended. A program that ends before taking all
    its input is not sent the rest, and what it said is awaited briefly before the caller
    closes the stream. An error of ``data`` (a client gone, a body over its limit) is raised
    once the program, seeing its input end there, has finished."""
    reader = asyncio.ensure_future(reading)
    sender = asyncio.ensure_future(send_stdin(stream, data))  # half-closes stdin however it ends
    ended = asyncio.ensure_future(program_ended(exe))
    try:
        await asyncio.wait({reader, sender, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not sender.done():  # the program ended (or its output did) with input left unsent
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), timeout=0.5)
            if not reader.done():
                return  # the caller closes the stream, which ends the reading
        elif (failed := sender.exception()) is not None:
            await reader
            raise failed
        await reader
    finally:
        for task in (reader, sender, ended):
            task.cancel()
