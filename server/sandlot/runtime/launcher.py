"""A tenant's one-shot command (``shell.exec``) in a shell kept for them, not a ``docker exec``.

The OpenAI Agents SDK and inspect_ai run every command of an agent as a one-shot process, and
a ``docker exec`` costs ~50 ms of engine CPU and as much wall time: that was what each of their
commands cost. A session's *launcher* is a second persistent shell, opened by its first
one-shot (that one pays the exec) and kept until the session ends; every later one-shot runs
from it as :data:`~sandlot.runtime.shell_boot.ONE_SHOT` in a few milliseconds, with what a
``docker exec`` gives it: a fresh process leading a session of its own, the sandbox's own
environment with the request's over it, the working directory asked for, stdin, stdout and
stderr apart and capped, background children given two seconds to finish writing, a timeout
that kills the whole session. It is not the session's own shell, so a command there never
waits behind a one-shot; one-shots at once beyond the first, input given as a stream or over
:data:`~sandlot.runtime.channels.INLINE_MAX`, another user, or a shell without ``setsid`` and
``mkfifo`` go to a ``docker exec`` as before.
"""

from __future__ import annotations

import shlex
import time

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.base import ExecRequest, ExecResult, LimitsHit, SandboxRuntime
from sandlot.runtime.limits import worth_a_look
from sandlot.runtime.scripts import KILL_SESSION
from sandlot.runtime.shell import PersistentShell
from sandlot.runtime.shell_boot import ONE_SHOT

__all__ = ["oneshot"]

_LOST = b"sandlot: the command was killed with the shell that ran it\n"


async def oneshot(runtime: SandboxRuntime, shell: PersistentShell, request: ExecRequest) -> ExecResult | None:
    """Run ``request`` from ``shell`` (a session's launcher); None when it cannot run there now
    (the caller runs it with ``runtime.exec``)."""
    stdin = request.stdin
    if request.user is not None or not (stdin is None or isinstance(stdin, bytes)):
        return None
    request.validate()
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in request.env.items())
    where = f"{runtime.state_dir(shell.ref)}/x"
    started = time.perf_counter()
    try:
        res = await shell.program(
            ONE_SHOT,
            [where, request.cwd or "", exports, *request.argv()],
            stdin=stdin,
            timeout=request.timeout,
            output_limit=request.output_limit,
            wait=0,
            own_env=True,
            open_first=True,
            once=True,
        )
    except SandboxStateError:
        # the launcher ended under the command, killed with it (its session's end, or the
        # command itself: kill -9 -1): it ran, so it is never run again, and it is answered as
        # killed; the session's call path tells a session's end apart (409 session_ended)
        return ExecResult(137, b"", _LOST, (time.perf_counter() - started) * 1000)
    if res is None:
        return None
    head, newline, stderr = res.stderr.partition(b"\n")
    pid = int(head) if newline and head.isdigit() else 0
    if res.timed_out and pid:
        # what it left in its session, re-parented or not (a docker exec's timeout does the same)
        await runtime.run_program(shell.ref, KILL_SESSION, [str(pid)])
    looked = worth_a_look(res.exit_code, res.timed_out, stderr)
    hit = await runtime.limits_hit(shell.ref) if looked else LimitsHit()
    return ExecResult(
        exit_code=res.exit_code,
        stdout=res.stdout,
        stderr=stderr if newline else res.stderr,
        duration_ms=res.duration_ms,
        timed_out=res.timed_out,
        truncated=res.truncated,
        oom_killed=hit.oom_killed,
        pids_limited=hit.pids_limited,
    )
