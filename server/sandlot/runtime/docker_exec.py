"""Running commands in a Docker sandbox through ``docker exec``.

Three ways, for three kinds of program: our own helpers run to completion with their output
collected (:func:`run_quick`); a tenant's command runs behind a wrapper that first reports its
session's pid on stderr, so that a timeout can kill everything it started, not only the exec
(:func:`run_command`); a terminal's first line is its session leader's pid, for the same
reason (:func:`open_terminal`). The runtime's methods of the same names are these.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Mapping, Sequence
from typing import TYPE_CHECKING

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.base import ExecRequest, ExecResult, LimitsHit
from sandlot.runtime.docker_streams import PtyExecStream, engine, feed_while_reading, send_stdin
from sandlot.runtime.limits import worth_a_look
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.scripts import REPORT_PID_AND_EXEC

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["open_terminal", "run_command", "run_quick"]


async def run_quick(
    rt: DockerRuntime,
    ref: str,
    argv: list[str],
    *,
    stdin: bytes | AsyncIterable[bytes] | None,
    limit_s: float | None,
    output_limit: int,
    user: str | None = None,
) -> ExecResult:
    """Run a program of ours (no pid wrapper, no tree kill) to completion, as the sandbox user
    (or ``user``: the one a command to be killed runs as)."""
    start = time.perf_counter()
    out, err = CappedBuffer(output_limit), CappedBuffer(output_limit)
    exe, stream = await rt.attach(ref, argv, stdin=stdin is not None, helper=True, user=user)

    async def collect() -> None:
        with engine("exec"):
            while (msg := await stream.read_out()) is not None:
                (out if msg.stream == 1 else err).write(msg.data)

    try:
        async with asyncio.timeout(limit_s):
            reader = asyncio.ensure_future(collect())
            try:
                if stdin is not None:
                    await send_stdin(stream, stdin)
                await reader
            finally:
                reader.cancel()
    finally:
        await stream.close()
    return ExecResult(
        exit_code=await rt.exit_code(exe),
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        duration_ms=(time.perf_counter() - start) * 1000,
        truncated=out.truncated or err.truncated,
    )


async def run_command(rt: DockerRuntime, ref: str, request: ExecRequest) -> ExecResult:
    """Run a tenant's command (as the sandbox user, or ``request.user``); its stdin is sent
    while its output is read. On timeout, kill its whole session (the pid its wrapper
    reported). After a failure (a non-zero exit or a timeout), say whether the memory or the
    process limit stopped something: the client can tell "out of memory" or "fork refused"
    from its own bug."""
    request.validate()
    start = time.perf_counter()
    argv = ["/bin/sh", "-c", REPORT_PID_AND_EXEC, "sh", request.cwd or "", *request.argv()]
    stdin = request.stdin
    exe, stream = await rt.attach(ref, argv, stdin=stdin is not None, env=request.env, user=request.user)
    out = CappedBuffer(request.output_limit)
    err = CappedBuffer(request.output_limit)
    pid_line = bytearray()
    pid: int | None = None
    timed_out = False

    async def collect() -> None:
        nonlocal pid
        with engine("exec"):
            while (msg := await stream.read_out()) is not None:
                if msg.stream == 1:
                    out.write(msg.data)
                elif pid is None:
                    pid_line.extend(msg.data)
                    head, sep, rest = bytes(pid_line).partition(b"\n")
                    if sep:
                        pid = int(head) if head.isdigit() else 0
                        err.write(rest)
                else:
                    err.write(msg.data)

    async def pump() -> None:
        async with stream:
            await (collect() if stdin is None else feed_while_reading(exe, stream, stdin, collect()))

    task = asyncio.ensure_future(pump())
    try:
        await asyncio.wait_for(asyncio.shield(task), timeout=request.timeout)
    except TimeoutError:
        timed_out = True
        if pid:
            await rt.kill_session(ref, pid, request.user)
        try:
            await asyncio.wait_for(task, timeout=2.0)
        except TimeoutError:
            task.cancel()
    exit_code = None if timed_out else await rt.exit_code(exe)
    looked = worth_a_look(exit_code, timed_out, err.getvalue())
    hit = await rt.limits_hit(ref) if looked else LimitsHit()
    return ExecResult(
        exit_code=exit_code,
        stdout=out.getvalue(),
        stderr=err.getvalue(),
        duration_ms=(time.perf_counter() - start) * 1000,
        timed_out=timed_out,
        truncated=out.truncated or err.truncated,
        oom_killed=hit.oom_killed,
        pids_limited=hit.pids_limited,
    )


async def open_terminal(
    rt: DockerRuntime, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None
) -> PtyExecStream:
    """A terminal running ``argv``; closing it kills its whole session."""
    # the terminal's first line is its session leader's pid, so closing it can kill the
    # whole session (the shell and whatever it still runs)
    wrapped = ["/bin/sh", "-c", 'printf "%s\\n" "$$"; exec "$@"', "sh", *argv]
    exe, stream = await rt.attach(ref, wrapped, stdin=True, env=env, tty=True)
    head = bytearray()
    try:
        async with asyncio.timeout(10):  # the sandbox user can stop the shell before it prints
            with engine("terminal"):
                await exe.resize(h=rows, w=cols)
                while b"\n" not in head and len(head) < 64:
                    msg = await stream.read_out()
                    if msg is None:
                        break
                    head.extend(msg.data)
    except BaseException as exc:
        await stream.close()  # the attach, and its connection to the engine
        if isinstance(exc, TimeoutError):
            raise SandboxStateError("the terminal's shell did not start within 10 s") from exc
        raise
    line, _, rest = bytes(head).partition(b"\n")
    pid = int(line.strip()) if line.strip().isdigit() else 0

    async def kill() -> None:
        if pid:
            await rt.kill_session(ref, pid)

    return PtyExecStream(exe, stream, kill, initial=rest)
