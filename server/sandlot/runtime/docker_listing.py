"""Listing a container's workspace and exporting some of its entries, as the sandbox user
(the programs are in :mod:`sandlot.runtime.listing`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.docker_streams import engine, send_stdin
from sandlot.runtime.listing import EXPORT_PATHS, LIST_WORKSPACE, Listed, parse_listing
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.scripts import STATE_ROOT

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["export_paths", "list_workspace"]

_LISTING_LIMIT = 64 << 20  # bytes of names, and of numbers: beyond, the whole workspace is read


async def list_workspace(rt: DockerRuntime, ref: str, workspace: str) -> list[Listed] | None:
    argv = ["/bin/sh", "-c", LIST_WORKSPACE, "sh", workspace, f"{STATE_ROOT}/listing"]
    res = await rt.run_quick(ref, argv, limit_s=300, output_limit=_LISTING_LIMIT)
    if res.exit_code != 0 or res.truncated:
        return None
    return parse_listing(res.stdout, res.stderr)


async def export_paths(
    rt: DockerRuntime, ref: str, workspace: str, names: Sequence[str]
) -> AsyncIterator[bytes]:
    payload = b"".join(b"./" + n.encode("utf-8", "surrogateescape") + b"\0" for n in names)
    argv = ["/bin/sh", "-c", EXPORT_PATHS, "sh", workspace]
    exe, stream = await rt.attach(ref, argv, stdin=True, helper=True)
    sender = asyncio.ensure_future(send_stdin(stream, payload))
    err = CappedBuffer(1 << 14)
    try:
        with engine("read"):
            while (msg := await stream.read_out()) is not None:
                if msg.stream == 1:
                    if msg.data:
                        yield bytes(msg.data)
                else:
                    err.write(msg.data)
        await sender
    finally:
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender
        await stream.close()
    code = await rt.exit_code(exe)
    if code != 0:
        text = err.getvalue().decode(errors="replace").strip()[-300:]
        raise InvalidInput(f"some workspace entries could not be read ({code}): {text}")
