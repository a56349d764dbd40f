"""``shell``: commands through the session's persistent shell (``run``), or one-shot (``exec``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Literal

from pydantic import Field

from sandlot.domain.env import validate_env
from sandlot.domain.errors import InvalidInput, SandboxStateError, SandlotError
from sandlot.domain.paths import resolve_cwd
from sandlot.domain.users import USER_PATTERN
from sandlot.features.base import ActivityArgs, Feature, SandboxContext, SessionContext, activity
from sandlot.observability.tracing import traced_env
from sandlot.runtime.base import ExecRequest, LimitsHit
from sandlot.runtime.launcher import oneshot
from sandlot.runtime.limits import worth_a_look
from sandlot.runtime.output import decode_input, decode_output

__all__ = ["KEEPALIVE_SECONDS", "ShellFeature"]

KEEPALIVE_SECONDS = 5.0
_WRITABLE_WORKSPACE = 'test -d "$1" && test -w "$1"'


class RunArgs(ActivityArgs):
    command: Annotated[str, Field(min_length=1, max_length=131072)]
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0
    silence_timeout: Annotated[float | None, Field(gt=0, le=3600)] = None
    user: Annotated[str | None, Field(max_length=32)] = None  # refused: see ShellFeature.run


Arg = Annotated[str, Field(max_length=131072)]
User = Annotated[str, Field(min_length=1, max_length=32, pattern=USER_PATTERN)]
_ONE_SHELL = (
    "shell.run goes through the session's one persistent shell, which runs as the sandbox's "
    "own user; run a command as another user with shell.exec and its `user`"
)


class ExecArgs(ActivityArgs):
    argv: Annotated[list[Arg], Field(min_length=1, max_length=4096)]
    cwd: Annotated[str | None, Field(min_length=1, max_length=4096)] = None
    env: dict[str, Annotated[str, Field(max_length=32768)]] = Field(default_factory=dict, max_length=256)
    stdin: Annotated[str | None, Field(max_length=1 << 20)] = None
    stdin_encoding: Literal["utf-8", "base64"] = "utf-8"
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0
    user: User | None = None


def _result(res: Any, hit: LimitsHit) -> dict[str, Any]:
    return {
        "exit_code": res.exit_code,
        **decode_output(res.stdout, res.stderr),
        "duration_ms": round(res.duration_ms, 3),
        "timed_out": res.timed_out,
        "truncated": res.truncated,
        "oom_killed": hit.oom_killed,
        "pids_limited": hit.pids_limited,
    }


class ShellFeature(Feature):
    name = "shell"
    description = "A persistent shell: cwd and exported variables carry over between commands."

    async def housekeep(self, ctx: SandboxContext) -> None:
        """Keepalive: an idle sandbox must run a program of ours within a few seconds and its
        workspace must be a writable directory. Where this process holds the shell opened for
        the sandbox while it waits in the pool (the one its next session adopts), the check runs
        there (``run_program``): a shell that answers is the proof, and an idle pool costs the
        engine no ``docker exec`` per sandbox and round. A sandbox a session took since the
        round listed it is not idle: nothing to check."""
        if ctx.shells is not None and ctx.shells.in_session(ctx.ref):
            return
        try:
            res = await ctx.runtime.run_program(
                ctx.ref, _WRITABLE_WORKSPACE, [ctx.workspace], timeout=KEEPALIVE_SECONDS
            )
        except SandlotError as exc:
            raise SandboxStateError(f"keepalive failed: {exc.message}") from exc
        if res.exit_code != 0:
            raise SandboxStateError(f"keepalive failed (exit {res.exit_code}, timed out: {res.timed_out})")

    @activity(RunArgs)
    async def run(self, ctx: SessionContext, args: RunArgs) -> dict[str, Any]:
        """Run a command in the session's shell and return its exact output."""
        if args.user is not None:
            raise InvalidInput(_ONE_SHELL, field="user")
        res = await ctx.shell().run(
            args.command,
            timeout=args.timeout,
            silence_timeout=args.silence_timeout,
            output_limit=ctx.settings.exec_output_limit,
        )
        # a command that may have met a limit: one look at the sandbox's counters says which
        looked = worth_a_look(res.exit_code, res.timed_out, res.stderr)
        hit = await ctx.runtime.limits_hit(ctx.ref) if looked else LimitsHit()
        return {**_result(res, hit), "silence_timed_out": res.silence_timed_out}

    @activity(ExecArgs, upload="stdin")
    async def exec(self, ctx: SessionContext, args: ExecArgs) -> dict[str, Any]:
        """Run an argv to completion in a fresh process (no shell state; several may run at
        once), in ``cwd`` (default: the workspace), with exact stdout and stderr; as another
        ``user`` when the environment allows it; stdin streamed in a streamed call."""
        validate_env(args.env)
        stdin: bytes | AsyncIterator[bytes] | None = None
        if ctx.upload is not None:
            stdin = ctx.upload.chunks
        elif args.stdin is not None:
            stdin = decode_input(args.stdin, args.stdin_encoding, "stdin")
        request = ExecRequest(
            list(args.argv),
            stdin=stdin,
            env=traced_env(args.env),
            cwd=resolve_cwd(ctx.workspace, args.cwd) or ctx.workspace,
            timeout=args.timeout,
            output_limit=ctx.settings.exec_output_limit,
            user=args.user,
        )
        request.validate()  # a NUL or a bad cwd is refused before the sandbox is marked
        if args.user is not None:
            await ctx.allow_user(args.user)
        launcher = ctx.launcher()
        res = await oneshot(ctx.runtime, launcher, request) if launcher is not None else None
        if res is None:
            res = await ctx.runtime.exec(ctx.ref, request)
        if ctx.metrics is not None:
            ctx.metrics.command.labels("exec").observe(res.duration_ms / 1000)
        return _result(res, LimitsHit(res.oom_killed, res.pids_limited))

    async def teardown_session(self, ctx: SessionContext) -> None:
        assert ctx.shells is not None
        await ctx.shells.close(ctx.session_id)
