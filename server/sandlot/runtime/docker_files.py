"""Files and workspace archives of the Docker runtime.

Reads, writes and unpacking run inside the container as the sandbox user, through the programs
of :mod:`sandlot.runtime.file_scripts`, with the bytes streamed over the exec's stdin or stdout:
the sandbox's permissions hold, no name can steer them outside the workspace, and nothing is
held whole in the server's memory. Exporting uses the engine's archive endpoint (it reads what
the sandbox user cannot, and never follows links), streamed through
:func:`archives.strip_first_component`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from typing import TYPE_CHECKING, cast

from sandlot.domain.errors import (
    DiskFull,
    InvalidInput,
    PathOutsideWorkspace,
    PayloadTooLarge,
    SandboxStateError,
)
from sandlot.runtime.archives import ArchiveReport, strip_first_component
from sandlot.runtime.base import FileStream
from sandlot.runtime.bridge import CHUNK, one_chunk, transform
from sandlot.runtime.channels import INLINE_MAX
from sandlot.runtime.docker_streams import engine, program_ended, send_stdin
from sandlot.runtime.file_scripts import FILE_READ, FILE_WRITE, FIX_MODES, IMPORT_CHECK, file_error, octal
from sandlot.runtime.output import CappedBuffer

if TYPE_CHECKING:
    from aiodocker.stream import Stream

    from sandlot.runtime.docker import DockerRuntime

__all__ = ["export_workspace", "import_workspace", "read_file", "write_file"]

_HEADER_MAX = 32
_FINISH_SECONDS = 120.0  # after its input ended, a program of ours has this long to finish
_OPEN_SECONDS = 30.0  # a file being read must start coming within this
_ARGV_BUDGET = 96 * 1024  # bytes of paths per helper exec (well under ARG_MAX)


def _relative(path: str, workspace: str) -> str:
    root = workspace.rstrip("/")
    if path == root:
        return ""
    if not path.startswith(root + "/"):
        raise PathOutsideWorkspace(f"path {path!r} is outside the workspace", path=path)
    return path[len(root) + 1 :]


def _disk_full(text: str) -> bool:
    lowered = text.lower()
    return "no space left" in lowered or "quota exceeded" in lowered


async def _drain(stream: Stream, out: CappedBuffer | None, err: CappedBuffer) -> None:
    with engine("exec"):
        while (msg := await stream.read_out()) is not None:
            if msg.stream == 1:
                if out is not None:
                    out.write(msg.data)
            else:
                err.write(msg.data)


async def _feed_and_wait(
    rt: DockerRuntime, exe: object, stream: Stream, data: AsyncIterable[bytes], out: CappedBuffer | None
) -> tuple[int | None, bytes]:
    """Send ``data`` to the program's stdin while collecting its output; its exit code and
    stderr. A failing ``data`` (a client that went away, a body over its limit) half-closes
    stdin so the program sees a short input and cleans up, then raises."""
    err = CappedBuffer(1 << 14)
    reader = asyncio.ensure_future(_drain(stream, out, err))
    sender = asyncio.ensure_future(send_stdin(stream, data))  # half-closes stdin however it ends
    ended = asyncio.ensure_future(program_ended(exe))
    try:
        await asyncio.wait({reader, sender, ended}, return_when=asyncio.FIRST_COMPLETED)
        if not sender.done():
            # the program ended before it took all its input (a full disk, a refused path):
            # the rest is not sent, and the stream, which the engine holds open while stdin is
            # unsent, is closed once what the program said has come in
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(reader), timeout=0.5)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
        elif (failed := sender.exception()) is not None:
            with contextlib.suppress(Exception):  # let the program see the short input and clean up
                await asyncio.wait_for(asyncio.shield(reader), timeout=30)
            raise failed
        try:  # something in the sandbox may hold a program of ours: it is given up, not awaited
            if not reader.done():
                await asyncio.wait_for(asyncio.shield(reader), timeout=_FINISH_SECONDS)
        except TimeoutError as exc:
            raise InvalidInput("the file operation did not finish in the sandbox") from exc
    finally:
        reader.cancel()
        sender.cancel()
        ended.cancel()
        await stream.close()
    return await rt.exit_code(exe), err.getvalue()


async def write_file(
    rt: DockerRuntime, ref: str, path: str, workspace: str, data: AsyncIterable[bytes], size: int
) -> None:
    args = [workspace, octal(_relative(path, workspace)), str(size)]
    channel = rt.channels.find(ref) if size <= INLINE_MAX else None
    if channel is not None:  # small enough to gather first and send through the idle shell
        payload = await _take(data, size)
        res = await channel.program(
            FILE_WRITE, args, stdin=payload, timeout=_FINISH_SECONDS, output_limit=1 << 14
        )
        if res is not None:
            if res.timed_out:
                raise InvalidInput("the file operation did not finish in the sandbox")
            if res.exit_code != 0:
                raise file_error(res.exit_code, path, res.stderr)
            return
        data = one_chunk(payload)
    exe, stream = await rt.attach(ref, ["/bin/sh", "-c", FILE_WRITE, "sh", *args], stdin=True, helper=True)
    code, err = await _feed_and_wait(rt, exe, stream, data, None)
    if code != 0:
        raise file_error(code, path, err)


async def _take(data: AsyncIterable[bytes], size: int) -> bytes:
    """The first ``size`` bytes of ``data`` (fewer if it ends before), as one piece."""
    parts, got = [], 0
    async for chunk in data:
        parts.append(chunk)
        got += len(chunk)
        if got >= size:
            break
    return b"".join(parts)[:size]


async def read_file(rt: DockerRuntime, ref: str, path: str, workspace: str, limit: int) -> FileStream:
    rel = octal(_relative(path, workspace))
    channel = rt.channels.find(ref)
    if channel is not None:  # a file up to INLINE_MAX comes back whole through the idle shell
        cap = min(limit, INLINE_MAX)
        res = await channel.program(
            FILE_READ, [workspace, rel, str(cap)], timeout=_OPEN_SECONDS, output_limit=cap + _HEADER_MAX
        )
        if res is not None and not (res.exit_code == 18 and cap < limit):  # else: larger, streamed
            return _whole(res.exit_code, res.stdout, res.stderr, res.timed_out, path)
    argv = ["/bin/sh", "-c", FILE_READ, "sh", workspace, rel, str(limit)]
    exe, stream = await rt.attach(ref, argv, helper=True)
    header = bytearray()
    err = CappedBuffer(1 << 14)
    try:
        async with asyncio.timeout(_OPEN_SECONDS):  # a FIFO swapped in can hold the open
            with engine("read"):
                while b"\n" not in header and len(header) <= _HEADER_MAX:
                    msg = await stream.read_out()
                    if msg is None:
                        break
                    if msg.stream == 1:
                        header.extend(msg.data)
                    else:
                        err.write(msg.data)
    except TimeoutError as exc:
        await stream.close()
        raise InvalidInput(f"{path!r} could not be opened in time", path=path) from exc
    except BaseException:
        await stream.close()
        raise
    line, newline, rest = bytes(header).partition(b"\n")
    if not (newline and line.startswith(b"K") and line[1:].isdigit()):
        await _drain(stream, None, err)
        await stream.close()
        raise file_error(await rt.exit_code(exe), path, err.getvalue())

    return FileStream(int(line[1:]), _stdout(stream, rest))


def _whole(code: int | None, out: bytes, err: bytes, timed_out: bool, path: str) -> FileStream:
    """A file FILE_READ sent whole (through a channel): ``K<size>``, a newline, its bytes."""
    if timed_out:
        raise InvalidInput(f"{path!r} could not be read in time", path=path)
    line, newline, body = out.partition(b"\n")
    if code != 0 or not (newline and line.startswith(b"K") and line[1:].isdigit()):
        raise file_error(code, path, err)
    return FileStream(len(body), one_chunk(body))  # what was read, if the file changed meanwhile


async def _stdout(stream: Stream, first: bytes = b"") -> AsyncIterator[bytes]:
    """What a program writes to stdout (after ``first``), as it comes; closing the stream when
    the reading ends, however it ends."""
    try:
        if first:
            yield first
        with engine("read"):
            while (msg := await stream.read_out()) is not None:
                if msg.stream == 1 and msg.data:
                    yield bytes(msg.data)
    finally:
        await stream.close()


async def _estimate(rt: DockerRuntime, ref: str, workspace: str) -> int:
    """The workspace's size on disk in bytes, as far as the sandbox user can see it (0 when
    nothing runs there to ask: a stopped container's files can still be exported)."""
    try:
        res = await rt.run_program(ref, 'du -s -k "$1" 2>/dev/null', [workspace], timeout=120)
    except SandboxStateError:
        return 0
    first = res.stdout.split(b"\t", 1)[0].strip()
    return int(first) * 1024 if first.isdigit() else 0


async def export_workspace(rt: DockerRuntime, ref: str, workspace: str, limit: int) -> AsyncIterator[bytes]:
    if await _estimate(rt, ref, workspace) > limit:
        raise PayloadTooLarge(f"the workspace is larger than {limit} bytes", limit=limit)

    async def from_engine() -> AsyncIterator[bytes]:
        with engine("archive"):
            # the response is released however the export ends: one left open keeps the
            # container locked, and its next exec would hang
            # uncompressed: the engine gzips it for a client that accepts gzip (aiohttp's
            # default), which cost CPU on both sides for nothing on a local socket, and a cut
            # gzip stream failed as an undecodable payload (a 503 "engine unreachable")
            async with (
                rt.docker._query(
                    f"containers/{ref}/archive",
                    method="GET",
                    params={"path": workspace},
                    headers={"Accept-Encoding": "identity"},
                ) as resp,
                resp,
            ):
                async for chunk in resp.content.iter_chunked(CHUNK):
                    yield chunk

    if (await rt.facts(ref)).memory_workspace:
        # a workspace in memory (read-only root): the engine's endpoint does not see into it
        parent, _, name = workspace.rstrip("/").rpartition("/")
        argv = ["/bin/sh", "-c", 'cd -P -- "$1" && exec tar -c -f - "$2"', "sh", parent or "/", name]
        raw = _stdout((await rt.attach(ref, argv, helper=True))[1])
    else:
        raw = from_engine()
    sent = 0
    # both generators are closed however the export ends (an early stop included)
    stripped = cast(AsyncGenerator[bytes, None], transform(raw, strip_first_component))
    async with (
        contextlib.aclosing(cast(AsyncGenerator[bytes, None], raw)),
        contextlib.aclosing(stripped) as out,
    ):
        async for chunk in out:
            sent += len(chunk)
            if sent > limit + (1 << 20):  # the headers are not in the estimate
                raise PayloadTooLarge(f"the workspace archive passed {limit} bytes", limit=limit)
            yield chunk


async def _check_links(rt: DockerRuntime, ref: str, workspace: str, report: ArchiveReport) -> None:
    """Refuse the archive when a link already in the workspace would lead one of its members
    outside. Only the deepest directories are walked: walking them passes the others."""
    parents = sorted(report.parents)
    deepest = [
        p for i, p in enumerate(parents) if not (i + 1 < len(parents) and parents[i + 1].startswith(p + "/"))
    ]
    for batch in _batches([[d] for d in deepest]):
        args = [octal(d) for d in batch]
        res = await rt.run_program(ref, IMPORT_CHECK, [workspace, *args], timeout=120)
        if res.exit_code == 0:
            continue
        index = res.stdout.strip()
        where = batch[int(index)] if index.isdigit() and int(index) < len(batch) else "?"
        if res.exit_code in (10, 16):
            raise PathOutsideWorkspace(
                f"the archive's directory {where!r} leads outside the workspace through a link there",
                path=where[:200],
            )
        raise file_error(res.exit_code, where, res.stderr)


def _batches(groups: list[list[str]]) -> list[list[str]]:
    """Arguments for as few helper execs as the argv budget allows (a group stays whole)."""
    out: list[list[str]] = [[]]
    used = 0
    for group in groups:
        size = sum(len(arg.encode(errors="surrogateescape")) + 1 for arg in group)
        if out[-1] and used + size > _ARGV_BUDGET:
            out.append([])
            used = 0
        out[-1].extend(group)
        used += size
    return [b for b in out if b]


async def import_workspace(
    rt: DockerRuntime,
    ref: str,
    workspace: str,
    archive: AsyncIterable[bytes],
    report: ArchiveReport,
    *,
    check_links: bool,
) -> None:
    if check_links and report.parents:
        await _check_links(rt, ref, workspace, report)
    script = 'cd -P -- "$1" || exit 20; umask 000; exec tar -x -f -'
    exe, stream = await rt.attach(ref, ["/bin/sh", "-c", script, "sh", workspace], stdin=True, helper=True)
    code, err = await _feed_and_wait(rt, exe, stream, archive, None)
    if code != 0:
        text = err.decode(errors="replace").strip()[-300:]
        if _disk_full(text):
            raise DiskFull("no space left in the sandbox while unpacking the archive")
        raise InvalidInput(f"could not unpack the archive: {text}", field="archive")
    fixups = report.fixups()
    if fixups:
        for batch in _batches([[f"{mode:o}", octal(name)] for name, mode in fixups]):
            await rt.run_program(ref, FIX_MODES, [workspace, *batch], timeout=120)
