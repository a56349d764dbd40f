"""Input and output schemas of the JSON API (never table rows)."""

from __future__ import annotations

import base64
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from sandlot.runtime.base import ExecResult
from sandlot.store.tables import Sandbox, SandboxEvent

__all__ = [
    "ExecIn",
    "ExecOut",
    "FileWritten",
    "SandboxCreate",
    "SandboxEventOut",
    "SandboxOut",
]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SandboxCreate(_In):
    """Ask for a sandbox. Unset limits take the service defaults; all count against quota."""

    image: Annotated[str | None, Field(max_length=300)] = None
    env: dict[Annotated[str, Field(max_length=128)], Annotated[str, Field(max_length=32768)]] = Field(
        default_factory=dict, max_length=256
    )
    memory_mb: Annotated[int | None, Field(ge=16, le=1 << 20)] = None
    cpus: Annotated[float | None, Field(gt=0, le=256)] = None
    pids: Annotated[int | None, Field(ge=8, le=1 << 20)] = None
    network: bool = False
    ttl_seconds: Annotated[int | None, Field(ge=1)] = None
    read_only_root: bool = False


class SandboxOut(BaseModel):
    id: str
    tenant_id: str
    image: str
    status: str
    status_reason: str
    runtime: str
    workspace: str
    memory_mb: int
    cpus: float
    pids: int
    network: bool
    ttl_seconds: int | None
    expires_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, row: Sandbox) -> SandboxOut:
        return cls.model_validate(row, from_attributes=True)


class SandboxEventOut(BaseModel):
    from_status: str | None
    to_status: str
    reason: str
    at: datetime

    @classmethod
    def of(cls, row: SandboxEvent) -> SandboxEventOut:
        return cls.model_validate(row, from_attributes=True)


class ExecIn(_In):
    """A command: an argv list, or a string for ``/bin/sh -c``."""

    command: (
        Annotated[str, Field(min_length=1, max_length=131072)]
        | Annotated[list[Annotated[str, Field(max_length=131072)]], Field(min_length=1, max_length=4096)]
    )
    stdin: Annotated[str | None, Field(max_length=1 << 20)] = None
    stdin_encoding: Literal["utf-8", "base64"] = "utf-8"
    env: dict[str, Annotated[str, Field(max_length=32768)]] = Field(default_factory=dict, max_length=256)
    cwd: Annotated[str | None, Field(max_length=4096)] = None
    timeout: Annotated[float, Field(gt=0)] = 60.0

    def stdin_bytes(self) -> bytes | None:
        if self.stdin is None:
            return None
        if self.stdin_encoding == "base64":
            return base64.b64decode(self.stdin, validate=True)
        return self.stdin.encode()


class ExecOut(BaseModel):
    """A command's result. ``encoding`` is ``base64`` when the output is not valid UTF-8."""

    exit_code: int | None
    stdout: str
    stderr: str
    encoding: Literal["utf-8", "base64"]
    duration_ms: float
    timed_out: bool
    truncated: bool
    oom_killed: bool

    @classmethod
    def of(cls, res: ExecResult) -> ExecOut:
        try:
            out, err, enc = res.stdout.decode(), res.stderr.decode(), "utf-8"
        except UnicodeDecodeError:
            out = base64.b64encode(res.stdout).decode()
            err = base64.b64encode(res.stderr).decode()
            enc = "base64"
        return cls(
            exit_code=res.exit_code,
            stdout=out,
            stderr=err,
            encoding=enc,  # type: ignore[arg-type]
            duration_ms=round(res.duration_ms, 3),
            timed_out=res.timed_out,
            truncated=res.truncated,
            oom_killed=res.oom_killed,
        )


class FileWritten(BaseModel):
    path: str
    size: int
