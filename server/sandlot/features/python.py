"""``python``: run code in the sandbox's python3, returning the last expression's value."""

from __future__ import annotations

import base64
import json
import secrets
from typing import Annotated, Any

from pydantic import Field

from sandlot.domain.errors import InvalidInput
from sandlot.features.base import ActivityArgs, Feature, SessionContext, activity
from sandlot.runtime.output import decode_output

__all__ = ["PythonFeature"]

# Runs inside the sandbox: executes the code; if its last statement is an expression, evaluates
# it and prints its repr as JSON after a marker line, so the caller can split it from stdout.
_DRIVER = r"""
import ast, base64, json, sys
src = base64.b64decode(sys.argv[1]).decode()
marker = sys.argv[2]
tree = ast.parse(src, "<sandlot>")
last = None
if tree.body and isinstance(tree.body[-1], ast.Expr):
    last = ast.Expression(tree.body.pop().value)
scope = {"__name__": "__main__"}
exec(compile(tree, "<sandlot>", "exec"), scope)
value = None
if last is not None:
    value = eval(compile(last, "<sandlot>", "eval"), scope)
sys.stdout.flush()
sys.stdout.write("\n" + marker + json.dumps(None if value is None else repr(value)) + "\n")
"""


_SIGKILL_EXIT = 137


class RunArgs(ActivityArgs):
    code: Annotated[str, Field(max_length=96 * 1024)]
    timeout: Annotated[float, Field(gt=0, le=3600)] = 60.0


def _split_value(stdout: bytes, marker: str) -> tuple[bytes, str | None]:
    """The program's own output and the value the driver printed after ``marker`` (None when
    the code printed after it, exited early, or cut the line: its output stays as it was)."""
    head, sep, tail = stdout.rpartition(b"\n" + marker.encode())
    if not sep:
        return stdout, None
    line, _, after = tail.partition(b"\n")
    try:
        value = json.loads(line.decode())
    except (ValueError, UnicodeDecodeError):
        return stdout, None
    if not isinstance(value, str | None) or after:
        return stdout, None
    return head, value


class PythonFeature(Feature):
    name = "python"
    description = "Run Python code; returns stdout, stderr and the value of the last expression."

    def __init__(self, applicable_images: str = r".*python.*", **config: Any) -> None:
        super().__init__(applicable_images, **config)

    @activity(RunArgs)
    async def run(self, ctx: SessionContext, args: RunArgs) -> dict[str, Any]:
        """Run a code string with python3 in the session's shell."""
        marker = f"__SL_PY_{secrets.token_hex(8)}__"
        encoded = base64.b64encode(args.code.encode()).decode()
        quoted_driver = "'" + _DRIVER.replace("'", "'\"'\"'") + "'"
        command = f"python3 -c {quoted_driver} {encoded} {marker}"
        if len(command) > 120 * 1024:
            raise InvalidInput("code is too long", field="code")
        res = await ctx.shell().run(
            command,
            timeout=args.timeout,
            silence_timeout=None,
            output_limit=ctx.settings.exec_output_limit,
        )
        stdout, value = _split_value(res.stdout, marker)
        return {
            "exit_code": res.exit_code,
            **decode_output(stdout, res.stderr),
            "value": value,
            "duration_ms": round(res.duration_ms, 3),
            "timed_out": res.timed_out,
            "truncated": res.truncated,
            "oom_killed": res.exit_code == _SIGKILL_EXIT and await ctx.runtime.oom_killed(ctx.ref),
        }
