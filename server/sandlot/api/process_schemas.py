"""Input and output schemas of background processes (``api/processes.py``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from pydantic import Field

from sandlot.api.schemas import EnvMap, In, Out

__all__ = ["ProcessInput", "ProcessOut", "ProcessStart"]


class ProcessStart(In):
    """A command to start detached; its output is kept (capped) and readable from any offset."""

    command: Annotated[str, Field(min_length=1, max_length=8000)]
    env: EnvMap = Field(default_factory=dict)
    cwd: Annotated[str | None, Field(max_length=4096)] = None
    stdin: bool = Field(
        default=False,
        description="Give the command a stdin that `POST .../stdin` writes to (otherwise it reads "
        "/dev/null).",
    )
    tty: bool = Field(
        default=False,
        description="Run the command on a terminal (80x24, TERM=xterm) fed by that stdin: echo, "
        "^C and `isatty` as in a shell. Needs util-linux `script` in the image (422 otherwise).",
    )


class ProcessInput(In):
    """Bytes for a process's stdin (the text, UTF-8 encoded), and whether to close it after."""

    data: Annotated[str, Field(max_length=64 << 10)] = ""
    eof: bool = False


class ProcessOut(Out):
    id: str
    session_id: str
    sandbox_id: str
    command: str
    pid: int | None
    status: str
    exit_code: int | None
    output_bytes: int
    cpu_seconds: float | None
    peak_memory_kb: int | None
    started_at: datetime
    ended_at: datetime | None
    duration_seconds: float | None = None

    @classmethod
    def of(cls, row: object) -> Self:
        out = super().of(row)
        end = out.ended_at
        out.duration_seconds = (end - out.started_at).total_seconds() if end else None
        return out
