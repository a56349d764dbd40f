"""Input and output schemas of the JSON API (never table rows)."""

from __future__ import annotations

from collections.abc import AsyncIterable
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from sandlot.domain.users import USER_PATTERN
from sandlot.runtime.base import ExecRequest, ExecResult
from sandlot.runtime.output import decode_input, decode_output
from sandlot.store.tables import Session

__all__ = [
    "ActivityOut",
    "AssetOut",
    "AssetRef",
    "EnvironmentCreate",
    "EnvironmentOut",
    "EnvironmentUpdate",
    "ExecIn",
    "ExecOut",
    "FileWritten",
    "In",
    "Out",
    "ResumeOut",
    "SandboxCreate",
    "SandboxEventOut",
    "SandboxOut",
    "SessionCreate",
    "SessionOut",
    "SnapshotOut",
]


class In(BaseModel):
    """Base of input schemas: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")


#: Bounds that keep every number inside what the store and ``timedelta`` can hold.
MAX_SECONDS = 10**8


def _at_most(entries: int) -> AfterValidator:
    """A bound on a map's entries. Not ``Field(max_length=...)``: on a dict, Litestar's
    OpenAPI generation reads that as a sequence and documents the map as an array."""

    def check(value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and len(value) > entries:
            raise ValueError(f"at most {entries} entries")
        return value

    return AfterValidator(check)


_Value = Annotated[str, Field(max_length=32768)]
#: Environment variables for a sandbox or a process (names bounded too).
EnvMap = Annotated[dict[Annotated[str, Field(max_length=128)], _Value], _at_most(256)]
#: Environment variables for one command.
CommandEnv = Annotated[dict[str, _Value], _at_most(256)]
#: Features by name, with their configuration.
FeatureMap = Annotated[dict[str, dict[str, Any] | None], _at_most(64)]
#: A sandbox's CPUs: the engine refuses less than a hundredth of one (its error, with the
#: host's cgroup path, came back as a 503). Never NaN or infinite (every quota check is a
#: comparison, false for NaN).
Cpus = Annotated[float, Field(ge=0.01, le=256, allow_inf_nan=False)]
#: A user a command runs as (a name or a numeric uid, no group).
User = Annotated[str, Field(min_length=1, max_length=32, pattern=USER_PATTERN)]
#: Users an environment lets commands run as.
UserList = Annotated[list[User], Field(max_length=16)]
_USER_DOC = (
    "Run as this user instead of the image's; the sandbox's environment (`exec_users`) and the "
    "service (`exec_users_allowed`) must both allow it (403 otherwise). No capability comes "
    "with it, and the sandbox is never reused by another session afterwards."
)


class Out(BaseModel):
    """Base of output schemas, made from table rows with :meth:`of`."""

    @classmethod
    def of(cls, row: object) -> Self:
        """The schema of a table row (never the row itself)."""
        return cls.model_validate(row, from_attributes=True)


class SandboxCreate(In):
    """Ask for a sandbox. Unset limits take the service defaults; all count against quota."""

    image: Annotated[str | None, Field(max_length=300)] = None
    env: EnvMap = Field(default_factory=dict)
    memory_mb: Annotated[int | None, Field(ge=16, le=1 << 20)] = None
    cpus: Cpus | None = None
    pids: Annotated[int | None, Field(ge=8, le=1 << 20)] = None
    disk_mb: Annotated[int | None, Field(ge=16, le=1 << 24)] = None
    network: bool = False
    ttl_seconds: Annotated[int | None, Field(ge=1, le=MAX_SECONDS)] = None
    read_only_root: bool = False


class SandboxOut(Out):
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
    disk_mb: int | None
    network: bool
    ttl_seconds: int | None
    expires_at: datetime | None
    environment_id: str | None
    session_id: str | None
    reusable: bool = Field(
        default=True,
        description="False once a command ran in it as another user than the image's: no "
        "other session will get it.",
    )
    created_at: datetime
    updated_at: datetime


class SandboxEventOut(Out):
    from_status: str | None
    to_status: str
    reason: str
    at: datetime


class ExecIn(In):
    """A command: an argv list, or a string for ``/bin/sh -c``."""

    command: (
        Annotated[str, Field(min_length=1, max_length=131072)]
        | Annotated[list[Annotated[str, Field(max_length=131072)]], Field(min_length=1, max_length=4096)]
    )
    stdin: Annotated[str | None, Field(max_length=1 << 20)] = None
    stdin_encoding: Literal["utf-8", "base64"] = "utf-8"
    env: CommandEnv = Field(default_factory=dict)
    cwd: Annotated[str | None, Field(max_length=4096)] = None
    timeout: Annotated[float, Field(gt=0, le=MAX_SECONDS)] = 60.0
    user: Annotated[User | None, Field(description=_USER_DOC)] = None

    def stdin_bytes(self) -> bytes | None:
        return None if self.stdin is None else decode_input(self.stdin, self.stdin_encoding, "stdin")

    def request(self, stdin: bytes | AsyncIterable[bytes] | None, output_limit: int) -> ExecRequest:
        """The command for the runtime, with ``stdin`` (decoded, or streamed)."""
        return ExecRequest(self.command, stdin, self.env, self.cwd, self.timeout, output_limit, self.user)


class ExecOut(BaseModel):
    """A command's result. ``encoding`` is ``base64`` when the output is not valid UTF-8."""

    exit_code: int | None
    stdout: str
    stderr: str
    encoding: Literal["utf-8", "base64"]
    duration_ms: float
    timed_out: bool = Field(description="Killed (with everything it started) at its timeout.")
    truncated: bool
    oom_killed: bool = Field(
        description="The command failed and the sandbox's memory limit killed a process since the last look."
    )
    pids_limited: bool = Field(
        default=False,
        description="The command failed and a fork in the sandbox was refused at its process "
        "limit (`pids`) since the last look: a fork bomb or too many processes.",
    )

    @classmethod
    def from_result(cls, res: ExecResult) -> ExecOut:
        return cls(
            exit_code=res.exit_code,
            **decode_output(res.stdout, res.stderr),  # type: ignore[arg-type]
            duration_ms=round(res.duration_ms, 3),
            timed_out=res.timed_out,
            truncated=res.truncated,
            oom_killed=res.oom_killed,
            pids_limited=res.pids_limited,
        )


class FileWritten(Out):
    path: str
    size: int


class WorkspaceImported(Out):
    """An archive unpacked over a session's workspace (``size``: bytes received)."""

    size: int


PoolSize = int | list[int] | dict[str, list[int]]


class EnvironmentFields(In):
    """Fields of an environment; on create, unset ones take these defaults."""

    images: Annotated[list[Annotated[str, Field(max_length=300)]], Field(min_length=1, max_length=64)]
    features: FeatureMap = Field(default_factory=dict)
    pool_size: PoolSize = 0
    memory_mb: Annotated[int, Field(ge=16, le=1 << 20)] = 512
    cpus: Cpus = 1.0
    pids: Annotated[int, Field(ge=8, le=1 << 20)] = 256
    disk_mb: Annotated[int | None, Field(ge=16, le=1 << 24)] = None
    network: bool = False
    env: CommandEnv = Field(default_factory=dict)
    exec_users: UserList = Field(
        default_factory=list,
        description="Users commands may run as besides the image's (`user` of an exec), among "
        "those the service allows (`exec_users_allowed`). Empty: the image's user only.",
    )
    session_ttl_seconds: Annotated[int | None, Field(ge=1, le=MAX_SECONDS)] = 3600
    idle_timeout_seconds: Annotated[int | None, Field(ge=1, le=MAX_SECONDS)] = 600
    outage_grace_period_seconds: Annotated[float, Field(ge=0, le=MAX_SECONDS)] = 60.0
    housekeeping_interval_seconds: Annotated[float, Field(gt=0, le=3600)] = 10.0
    idle_action: Literal["end", "suspend"] = "end"
    pool_idle_seconds: Annotated[
        int,
        Field(
            ge=0,
            le=MAX_SECONDS,
            description="How long a ready pool sandbox beyond the pool's minimum may wait idle "
            "before it is shut down, so an idle pool gives back what its busiest moment took "
            "(idle members count against the tenant's quotas). 0: never (the pool stays up to max).",
        ),
    ] = 600


class EnvironmentCreate(EnvironmentFields):
    name: Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]


class EnvironmentUpdate(In):
    """Only the fields given change."""

    images: Annotated[
        list[Annotated[str, Field(max_length=300)]] | None, Field(min_length=1, max_length=64)
    ] = None
    features: FeatureMap | None = None
    pool_size: PoolSize | None = None
    memory_mb: Annotated[int | None, Field(ge=16, le=1 << 20)] = None
    cpus: Cpus | None = None
    pids: Annotated[int | None, Field(ge=8, le=1 << 20)] = None
    disk_mb: Annotated[int | None, Field(ge=16, le=1 << 24)] = None
    network: bool | None = None
    env: CommandEnv | None = None
    exec_users: UserList | None = None
    session_ttl_seconds: Annotated[int | None, Field(ge=1, le=MAX_SECONDS)] = None
    idle_timeout_seconds: Annotated[int | None, Field(ge=1, le=MAX_SECONDS)] = None
    outage_grace_period_seconds: Annotated[float | None, Field(ge=0, le=MAX_SECONDS)] = None
    housekeeping_interval_seconds: Annotated[float | None, Field(gt=0, le=3600)] = None
    idle_action: Literal["end", "suspend"] | None = None
    pool_idle_seconds: Annotated[int | None, Field(ge=0, le=MAX_SECONDS)] = None


class EnvironmentOut(EnvironmentFields, Out):
    id: str
    tenant_id: str
    name: str
    created_at: datetime
    updated_at: datetime


class ManifestEntry(In):
    path: Annotated[str, Field(min_length=1, max_length=4096)]
    content: Annotated[str, Field(max_length=16 << 20)]
    encoding: Literal["utf-8", "base64"] = "utf-8"

    def data(self) -> bytes:
        return decode_input(self.content, self.encoding, "manifest")


class AssetRef(In):
    name: Annotated[str, Field(min_length=1, max_length=100)]
    path: Annotated[
        str | None,
        Field(max_length=4096, description="Where in the workspace (default: the asset's name)."),
    ] = None


class SessionCreate(In):
    environment: Annotated[str, Field(min_length=1, max_length=100)]
    image: Annotated[str | None, Field(max_length=300)] = None
    feature: Annotated[str | None, Field(max_length=100)] = None
    session_id: Annotated[
        str | None,
        Field(
            max_length=64,
            description="Your own id for the session, unique within your tenant; every "
            "/v1/sessions/{id} route accepts it in place of the service's id.",
        ),
    ] = None
    manifest: Annotated[list[ManifestEntry], Field(max_length=1000)] = Field(default_factory=list)
    assets: Annotated[list[AssetRef], Field(max_length=100)] = Field(default_factory=list)
    snapshot_id: Annotated[
        str | None,
        Field(max_length=32, description="Start with the workspace (and shell state) of this snapshot."),
    ] = None


class SessionOut(Out):
    id: str
    client_ref: str | None = Field(
        default=None, description="The id the client chose at start (`session_id`); usable in place of `id`."
    )
    tenant_id: str
    environment_id: str
    sandbox_id: str | None
    image: str
    status: str
    end_reason: str
    state: dict[str, Any]
    created_at: datetime
    last_activity_at: datetime
    expires_at: datetime | None
    ended_at: datetime | None
    warm: bool | None = None

    @classmethod
    def of(cls, row: object) -> Self:
        """The session, its ``state`` completed with the sandbox it holds: everything a client
        needs to resume it (environment, image, sandbox, last snapshot, shell cwd and exports,
        assets)."""
        out = super().of(row)
        out.state = {**out.state, "session_id": out.id, "sandbox_id": out.sandbox_id, "status": out.status}
        return out

    @classmethod
    def started(cls, row: Session, warm: bool) -> SessionOut:
        out = cls.of(row)
        out.warm = warm
        return out


class ActivityOut(Out):
    id: int | None
    session_id: str | None
    sandbox_id: str | None
    feature: str
    name: str
    args_summary: str
    duration_ms: float
    error: str | None
    error_code: str | None
    started_at: datetime


class SnapshotOut(Out):
    id: str
    session_id: str
    parent_id: str | None
    kind: str
    size_bytes: int
    file_count: int
    diff: dict[str, list[str]]
    created_at: datetime


class ResumeOut(Out):
    session: SessionOut
    how: Literal["reattached", "hydrated"]
    snapshot_id: str | None = None


class AssetOut(Out):
    name: str
    kind: str
    size_bytes: int
    sha256: str
    created_at: datetime
