"""Scanning a container's workspace, as the sandbox user: in the sandbox's idle shell when this
process holds one (the listing, then the entries asked for when they are few enough to come
back whole: no ``docker exec`` at all), else one program of ours in an exec of its own lists it
and then exports the entries asked for (:data:`listing.SCAN_WORKSPACE`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.channels import INLINE_MAX
from sandlot.runtime.docker_streams import engine, send_stdin
from sandlot.runtime.listing import EXPORT_NAMED, LIST_WORKSPACE, SCAN_WORKSPACE, Listed, parse_listing
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.scripts import STATE_ROOT

if TYPE_CHECKING:
    from aiodocker.stream import Stream

    from sandlot.runtime.docker import DockerRuntime

__all__ = ["scan_workspace"]

_LISTING_LIMIT = 64 << 20  # bytes of names, and of numbers: beyond, the whole workspace is read
_END_SECONDS = 30.0  # the program, its input closed with nothing asked, ends within this
#: A listing in the shell comes back whole: up to this much of each stream (else an exec).
_SHELL_LISTING = 8 << 20
_SHELL_SECONDS = 60.0
#: What a tar spends on an entry beyond its content (header, long-name header, padding), and
#: on its end: an export estimated within INLINE_MAX comes back whole through the shell.
_TAR_ENTRY = 2048
_TAR_END = 10240


def _names(names: Sequence[str]) -> bytes:
    return b"".join(b"./" + n.encode("utf-8", "surrogateescape") + b"\0" for n in names)


def _unreadable(code: int | None, err: bytes) -> InvalidInput:
    text = err.decode(errors="replace").strip()[-300:]
    return InvalidInput(f"some workspace entries could not be read ({code}): {text}")


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
        payload = _names(names)
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
            raise _unreadable(code, self._err.getvalue())

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


class _ShellScan:
    """A listing made in the sandbox's idle shell; the export of what it names goes the same
    way when the tar is sure to fit in what a program may give back whole (a suspend after a
    few changes), else through an exec of its own (streamed, any size)."""

    def __init__(self, rt: DockerRuntime, ref: str, workspace: str, listing: list[Listed] | None) -> None:
        self._rt, self._ref, self._workspace = rt, ref, workspace
        self.listing = listing

    async def export(self, names: Sequence[str]) -> AsyncIterator[bytes]:
        payload = _names(names)
        sizes = {e.name: e.size for e in self.listing or ()}
        estimate = sum(_TAR_ENTRY + sizes.get(n, INLINE_MAX) for n in names) + _TAR_END
        channel = self._rt.channels.find(self._ref) if estimate <= INLINE_MAX else None
        res = None
        if channel is not None and len(payload) <= INLINE_MAX:
            args = [self._workspace]
            res = await channel.program(
                EXPORT_NAMED, args, stdin=payload, timeout=_SHELL_SECONDS, output_limit=INLINE_MAX
            )
        if res is not None and not res.truncated and not res.timed_out:  # (grown meanwhile: below)
            if res.exit_code != 0:
                raise _unreadable(res.exit_code, res.stderr)
            yield res.stdout
            return
        argv = ["/bin/sh", "-c", EXPORT_NAMED, "sh", self._workspace]
        exe, stream = await self._rt.attach(self._ref, argv, stdin=True, helper=True)
        scan = _Scan(self._rt, exe, stream)
        try:
            async for chunk in scan.export(names):
                yield chunk
        finally:
            await scan.finish()


async def _list_in_shell(rt: DockerRuntime, ref: str, workspace: str) -> _ShellScan | None:
    """The listing made in the sandbox's idle shell; None when there is none, or it did not
    come back whole (then an exec lists it)."""
    channel = rt.channels.find(ref)
    if channel is None:
        return None
    args = [workspace, f"{STATE_ROOT}/listing"]
    res = await channel.program(LIST_WORKSPACE, args, timeout=_SHELL_SECONDS, output_limit=_SHELL_LISTING)
    if res is None or res.exit_code != 0 or res.truncated or res.timed_out:
        return None
    out, err = res.stdout, res.stderr
    if not (out.endswith(b"\nE\n") and (err == b"E\0" or err.endswith(b"\0E\0"))):
        return None
    lines = out[: -len(b"E\n")]
    listing = None if b"\nF\n" in lines else parse_listing(lines, err[: -len(b"E\0")])
    return _ShellScan(rt, ref, workspace, listing)


@contextlib.asynccontextmanager
async def scan_workspace(rt: DockerRuntime, ref: str, workspace: str) -> AsyncIterator[_Scan | _ShellScan]:
    in_shell = await _list_in_shell(rt, ref, workspace)
    if in_shell is not None:
        yield in_shell
        return
    argv = ["/bin/sh", "-c", SCAN_WORKSPACE, "sh", workspace, f"{STATE_ROOT}/listing"]
    exe, stream = await rt.attach(ref, argv, stdin=True, helper=True)
    scan = _Scan(rt, exe, stream)
    try:
        await scan.read_listing()
        yield scan
    finally:
        await scan.finish()
