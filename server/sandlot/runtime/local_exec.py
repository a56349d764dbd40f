"""Running a local sandbox's command to completion: its input, its output up to the limit,
and its timeout, after which its whole tree is killed."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping, Sequence

from sandlot.runtime.base import ExecRequest, ExecResult
from sandlot.runtime.local_procs import feed_pipe, kill_tree
from sandlot.runtime.local_spawn import DEVNULL, PIPE, spawn
from sandlot.runtime.output import CappedBuffer

__all__ = ["run_confined"]


async def run_confined(
    argv: Sequence[str],
    request: ExecRequest,
    *,
    cwd: str,
    env: Mapping[str, str],
    running: set[int],
    pass_fds: Sequence[int] = (),
) -> ExecResult:
    """Run ``argv`` (``request``'s command as confinement wraps it) to completion, with its
    stdin, timeout (the whole tree killed) and output limit; its pid is in ``running`` while it
    runs (so a reset or a removal can kill it)."""
    start = time.perf_counter()
    try:
        proc = await spawn(
            argv,
            stdin=PIPE if request.stdin is not None else DEVNULL,
            stdout=PIPE,
            stderr=PIPE,
            cwd=cwd,
            env=env,
            pass_fds=pass_fds,
        )
    except FileNotFoundError as exc:
        return ExecResult(127, b"", f"{exc}\n".encode(), (time.perf_counter() - start) * 1000)
    running.add(proc.pid)
    out = CappedBuffer(request.output_limit)
    err = CappedBuffer(request.output_limit)

    async def pump(reader: asyncio.StreamReader | None, buf: CappedBuffer) -> None:
        assert reader is not None
        while chunk := await reader.read(1 << 16):
            buf.write(chunk)

    timed_out = False
    feed = feed_pipe(proc.stdin, request.stdin)
    work = asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), feed, proc.wait())
    try:
        await asyncio.wait_for(work, timeout=request.timeout)
    except TimeoutError:
        timed_out = True
        kill_tree(proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), timeout=2.0)
    finally:
        running.discard(proc.pid)
        proc.close_pipes()
    code = None if timed_out else proc.returncode
    if code is not None and code < 0:
        code = 128 - code  # killed by a signal: report like a shell does
    return ExecResult(
        exit_code=code,
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        duration_ms=(time.perf_counter() - start) * 1000,
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
    )
