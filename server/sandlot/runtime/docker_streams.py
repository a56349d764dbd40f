"""The attached streams of the Docker runtime: an exec with stdin (the persistent shell, the
output followers) and an exec with a TTY (terminals)."""

from __future__ import annotations

from typing import Any

import aiodocker
from aiodocker.stream import Stream

from sandlot.domain.errors import SandboxStateError

__all__ = ["ExecStream", "PtyExecStream", "send_stdin"]

# aiodocker asserts its transport is there when writing; after the container died it is not
_WRITE_FAILED = (RuntimeError, OSError, AssertionError, aiodocker.DockerError)


async def _write_in(stream: Stream, data: bytes, what: str) -> None:
    try:
        await stream.write_in(data)
    except _WRITE_FAILED as exc:
        raise SandboxStateError(f"{what} is gone: {exc!r}") from exc


class ExecStream:
    """:class:`~sandlot.runtime.base.ProcessStream` over an attached ``docker exec``."""

    def __init__(self, stream: Stream) -> None:
        self._stream = stream

    async def write(self, data: bytes) -> None:
        await _write_in(self._stream, data, "the sandbox process")

    async def read(self) -> tuple[int, bytes] | None:
        try:
            msg = await self._stream.read_out()
        except (OSError, aiodocker.DockerError) as exc:
            raise SandboxStateError(f"lost the sandbox process: {exc}") from exc
        return None if msg is None else (msg.stream, msg.data)

    async def close(self) -> None:
        await self._stream.close()


class PtyExecStream:
    """:class:`~sandlot.runtime.base.PtyStream` over a ``docker exec`` with a TTY."""

    def __init__(self, exe: Any, stream: Stream) -> None:
        self._exe = exe
        self._stream = stream

    async def write(self, data: bytes) -> None:
        await _write_in(self._stream, data, "the terminal")

    async def read(self) -> bytes | None:
        try:
            msg = await self._stream.read_out()
        except (OSError, aiodocker.DockerError) as exc:
            raise SandboxStateError(f"lost the terminal: {exc}") from exc
        return None if msg is None else bytes(msg.data)

    async def resize(self, cols: int, rows: int) -> None:
        try:
            await self._exe.resize(h=rows, w=cols)
        except aiodocker.DockerError as exc:
            raise SandboxStateError(f"could not resize the terminal: {exc.message}") from exc

    async def close(self) -> None:
        await self._stream.close()


async def send_stdin(stream: Stream, data: bytes) -> None:
    """Write ``data`` to an exec's stdin, then half-close it so the command sees EOF.

    aiodocker's ``Stream.close()`` would also stop the output, so the write side of the
    hijacked connection is shut directly.
    """
    if data:
        await stream.write_in(data)
    resp = stream._resp
    if resp is not None and resp.connection is not None:
        transport = resp.connection.transport
        if transport is not None and transport.can_write_eof():
            transport.write_eof()
