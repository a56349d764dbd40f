"""``shell``: commands through the session's persistent shell."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from sandlot.domain.errors import SandboxStateError, SandlotError
from sandlot.features.base import ActivityArgs, Feature, SandboxContext, SessionContext, activity
from sandlot.runtime.base import ExecRequest
from sandlot.runtime.output import decode_output

__all__ = ["KEEPALIVE_SECONDS", "ShellFeature"]

KEEPALIVE_SECONDS = 5.0


class RunArgs(ActivityArgs):
    command: Annotated[str, Field(min_length=1, max_length=131072)]
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0
    silence_timeout: Annotated[float | None, Field(gt=0, le=3600)] = None


class ShellFeature(Feature):
    name = "shell"
    description = "A persistent shell: cwd and exported variables carry over between commands."

    async def housekeep(self, ctx: SandboxContext) -> None:
        """Keepalive: an idle sandbox must start a shell within a few seconds and its
        workspace must be a writable directory."""
        probe = ExecRequest(
            ["/bin/sh", "-c", 'test -d "$1" && test -w "$1"', "sh", ctx.workspace], timeout=KEEPALIVE_SECONDS
        )
        try:
            res = await ctx.runtime.exec(ctx.ref, probe)
        except SandlotError as exc:
            raise SandboxStateError(f"keepalive failed: {exc.message}") from exc
        if res.exit_code != 0:
            raise SandboxStateError(f"keepalive failed (exit {res.exit_code}, timed out: {res.timed_out})")

    @activity(RunArgs)
    async def run(self, ctx: SessionContext, args: RunArgs) -> dict[str, Any]:
        """Run a command in the session's shell and return its exact output."""
        res = await ctx.shell().run(
            args.command,
            timeout=args.timeout,
            silence_timeout=args.silence_timeout,
            output_limit=ctx.settings.exec_output_limit,
        )
        return {
            "exit_code": res.exit_code,
            **decode_output(res.stdout, res.stderr),
            "duration_ms": round(res.duration_ms, 3),
            "timed_out": res.timed_out,
            "silence_timed_out": res.silence_timed_out,
            "truncated": res.truncated,
        }

    async def teardown_session(self, ctx: SessionContext) -> None:
        assert ctx.shells is not None
        await ctx.shells.close(ctx.session_id)
