"""Scanning a container's workspace: one program of ours, as the sandbox user, lists it and
then exports the entries asked for (:data:`listing.SCAN_WORKSPACE`), so a snapshot costs one
exec."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.docker_streams import engine, send_stdin
from sandlot.runtime.listing import SCAN_WORKSPACE, Listed, parse_listing
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.scripts import STATE_ROOT

if TYPE_CHECKING:
    from aiodocker.stream import Stream

    from sandlot.runtime.docker import DockerRuntime

__all__ = ["scan_workspace"]

_LISTING_LIMIT = 64 << 20  # bytes of names, and of numbers: beyond, the whole workspace is read
_END_SECONDS = 30.0  # the program, its input closed with nothing asked, ends within this


class _Scan:
    def __init__(self, rt: DockerRuntime, exe: Any, stream: Stream) -> None:
        self._rt, self._exe, self._stream = rt, exe, stream
        self._err = CappedBuffer(1 << 14)
        self._asked = False
        self.listing: list[Listed] | None = None

    async def read_listing(self) -> None:
        """Read until both streams have said ``E`` (then the program waits for its input)."""
        out, err = bytearray(), bytearray()
        with engine("scan"):
            while not (out.endswith(b"\nE\n") and (err == b"E\0" or err.endswith(b"\0E\0"))):
                msg = await self._stream.read_out()
                if msg is None or len(out) > _LISTING_LIMIT or len(err) > _LISTING_LIMIT:
                    return  # it ended early (no workspace), or too much to keep: no listing
                (out if msg.stream == 1 else err).extend(msg.data)
        lines = bytes(out[: -len(b"E\n")])
        if b"\nF\n" not in lines:
            self.listing = parse_listing(lines, bytes(err[: -len(b"E\0")]))

    async def export(self, names: Sequence[str]) -> AsyncIterator[bytes]:
        assert not self._asked, "one export per scan"
        self._asked = True
        payload = b"".join(b"./" + n.encode("utf-8", "surrogateescape") + b"\0" for n in names)
        sender = asyncio.ensure_future(send_stdin(self._stream, payload))
        try:
            with engine("scan"):
                while (msg := await self._stream.read_out()) is not None:
                    if msg.stream != 1:
                        self._err.write(msg.data)
                    elif msg.data:
                        yield bytes(msg.data)
            await sender
        finally:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
        code = await self._rt.exit_code(self._exe)
        if code != 0:
            text = self._err.getvalue().decode(errors="replace").strip()[-300:]
            raise InvalidInput(f"some workspace entries could not be read ({code}): {text}")

    async def finish(self) -> None:
        """End the program: nothing asked (its input closes empty), or after the export."""
        try:
            if not self._asked:
                with contextlib.suppress(Exception):
                    await send_stdin(self._stream, b"")
                    async with asyncio.timeout(_END_SECONDS):
                        while await self._stream.read_out() is not None:
                            pass
        finally:
            await self._stream.close()


@contextlib.asynccontextmanager
async def scan_workspace(rt: DockerRuntime, ref: str, workspace: str) -> AsyncIterator[_Scan]:
    argv = ["/bin/sh", "-c", SCAN_WORKSPACE, "sh", workspace, f"{STATE_ROOT}/listing"]
    exe, stream = await rt.attach(ref, argv, stdin=True, helper=True)
    scan = _Scan(rt, exe, stream)
    try:
        await scan.read_listing()
        yield scan
    finally:
        await scan.finish()
