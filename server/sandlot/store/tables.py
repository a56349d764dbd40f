"""Database tables. Input and output schemas live in ``sandlot.api.schemas``, never here."""

from __future__ import annotations

import re
import secrets
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlmodel import Field, SQLModel

from sandlot.store.types import UtcDateTime, utcnow

__all__ = [
    "ID_RE",
    "STORAGE_CONTENT",
    "STORAGE_TAR",
    "Activity",
    "ApiKey",
    "ContentBlob",
    "Environment",
    "Sandbox",
    "SandboxEvent",
    "Session",
    "SnapshotBlob",
    "Tenant",
    "new_id",
]


def new_id(prefix: str) -> str:
    """A short random id with a readable type prefix, e.g. ``sbx_3f9a0c1d2e4b5a69``."""
    return f"{prefix}_{secrets.token_hex(8)}"


#: What :func:`new_id` makes. A name a caller gives may not look like one: an id then always
#: means the object it names, never an object of the same name (in another tenant's hands).
ID_RE = re.compile(r"[a-z]{3}_[0-9a-f]{16}")  # use fullmatch


def _ts(**kw: Any) -> Any:
    return Field(default_factory=utcnow, sa_type=UtcDateTime, **kw)


class Tenant(SQLModel, table=True):
    """A customer. Quotas bound what its keys may ask for at once."""

    __tablename__ = "tenants"

    id: str = Field(default_factory=lambda: new_id("ten"), primary_key=True, max_length=32)
    name: str = Field(unique=True, max_length=100)
    max_sandboxes: int = 20
    max_memory_mb: int = 16384
    max_cpus: float = 8.0
    max_sessions: int = 20
    max_disk_mb: int = 64 * 1024  # workspace disk of its live sandboxes, together
    max_snapshot_mb: int = 10 * 1024  # what its checkpoints and suspends keep, together
    max_ttl_seconds: int | None = None  # None: the service's own max_ttl_seconds
    max_keys: int = 50  # API keys not revoked
    max_environments: int = 50
    allow_network: bool = False
    created_at: datetime = _ts()


class ApiKey(SQLModel, table=True):
    """A hashed API key. ``prefix`` finds the row; ``digest`` proves the key."""

    __tablename__ = "api_keys"

    id: str = Field(default_factory=lambda: new_id("key"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    name: str = Field(default="", max_length=100)
    prefix: str = Field(unique=True, max_length=16)
    digest: str = Field(max_length=64)
    scopes: list[str] = Field(default_factory=list, sa_type=sa.JSON)
    created_at: datetime = _ts()
    revoked_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


class IssuedToken(SQLModel, table=True):
    """A token the service signed for a key (a terminal's, a console sign-in's): what makes a
    terminal token good for one use and a signed-out console session end everywhere. Times
    are Unix seconds; rows past their expiry are removed as new tokens are issued."""

    __tablename__ = "issued_tokens"

    id: str = Field(primary_key=True, max_length=32)
    key_id: str = Field(max_length=32)
    audience: str = Field(max_length=200)
    expires_at: float = Field(index=True)
    used_at: float | None = None
    revoked_at: float | None = None


class Sandbox(SQLModel, table=True):
    """One container (or local directory) and where it is in its life."""

    __tablename__ = "sandboxes"

    id: str = Field(default_factory=lambda: new_id("sbx"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    image: str = Field(max_length=300)
    status: str = Field(index=True, max_length=20)
    status_reason: str = Field(default="", max_length=500)
    runtime: str = Field(max_length=20)
    runtime_ref: str | None = Field(default=None, max_length=100)
    # the deployment whose containers carry this in their labels (None: before it was kept)
    instance: str | None = Field(default=None, index=True, max_length=64)
    workspace: str = Field(default="/workspace", max_length=300)
    memory_mb: int
    cpus: float
    pids: int
    disk_mb: int | None = None
    network: bool = False
    env: dict[str, str] = Field(default_factory=dict, sa_type=sa.JSON)
    ttl_seconds: int | None = None
    expires_at: datetime | None = Field(default=None, sa_type=UtcDateTime, index=True)
    environment_id: str | None = Field(default=None, index=True, max_length=32)
    session_id: str | None = Field(default=None, max_length=64)
    # false once a command ran as a user other than the image's: what it did (files owned by
    # root, processes the sandbox user cannot kill) cannot be proven undone, so no other
    # session ever gets this sandbox (its session's end shuts it down instead of a reset)
    reusable: bool = True
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class SandboxEvent(SQLModel, table=True):
    """One status transition of a sandbox, with its time and reason."""

    __tablename__ = "sandbox_events"

    id: int | None = Field(default=None, primary_key=True)
    sandbox_id: str = Field(foreign_key="sandboxes.id", index=True, max_length=32)
    tenant_id: str = Field(max_length=32)
    from_status: str | None = Field(default=None, max_length=20)
    to_status: str = Field(max_length=20)
    reason: str = Field(default="", max_length=500)
    at: datetime = _ts()


class Environment(SQLModel, table=True):
    """Tenant-scoped configuration: images, features, pools and sandbox defaults."""

    __tablename__ = "environments"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name"),)

    id: str = Field(default_factory=lambda: new_id("env"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    name: str = Field(max_length=100)
    images: list[str] = Field(default_factory=list, sa_type=sa.JSON)
    features: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    pool_size: Any = Field(default=0, sa_type=sa.JSON)
    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 256
    disk_mb: int | None = None
    network: bool = False
    env: dict[str, str] = Field(default_factory=dict, sa_type=sa.JSON)
    # users a session's commands may run as besides the image's (within the service's
    # exec_users_allowed)
    exec_users: list[str] = Field(default_factory=list, sa_type=sa.JSON)
    session_ttl_seconds: int | None = 3600
    idle_timeout_seconds: int | None = 600
    outage_grace_period_seconds: float = 60.0
    housekeeping_interval_seconds: float = 10.0
    idle_action: str = Field(default="end", max_length=20)
    # how long a ready pool sandbox beyond the pool's minimum waits before it is shut down (0: never)
    pool_idle_seconds: int = 600
    unhealthy_since: datetime | None = Field(default=None, sa_type=UtcDateTime)
    created_at: datetime = _ts()
    updated_at: datetime = _ts()


class Session(SQLModel, table=True):
    """A user's turn on a sandbox. ``state`` holds what resuming needs. ``id`` is the service's;
    ``client_ref`` is an id the client chose, unique within its tenant only (so one tenant's
    choice never collides with, or reveals, another's)."""

    __tablename__ = "sessions"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "client_ref", name="uq_sessions_tenant_client_ref"),)

    id: str = Field(primary_key=True, max_length=64)
    client_ref: str | None = Field(default=None, max_length=64)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    environment_id: str = Field(index=True, max_length=32)
    sandbox_id: str | None = Field(default=None, max_length=32)
    image: str = Field(max_length=300)
    status: str = Field(index=True, max_length=20)
    end_reason: str = Field(default="", max_length=500)
    state: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    created_at: datetime = _ts()
    last_activity_at: datetime = _ts()
    expires_at: datetime | None = Field(default=None, sa_type=UtcDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


class Activity(SQLModel, table=True):
    """One call of a feature method, with how long it took and how it ended."""

    __tablename__ = "activities"

    id: int | None = Field(default=None, primary_key=True)
    tenant_id: str = Field(max_length=32, index=True)
    session_id: str | None = Field(default=None, max_length=64, index=True)
    sandbox_id: str | None = Field(default=None, max_length=32)
    feature: str = Field(max_length=100)
    name: str = Field(max_length=100)
    args_summary: str = Field(default="", max_length=1000)
    duration_ms: float = 0.0
    error: str | None = Field(default=None, max_length=1000)
    error_code: str | None = Field(default=None, max_length=100)
    started_at: datetime = _ts()


class Process(SQLModel, table=True):
    """A command started detached in a session's sandbox; its output stays in the sandbox
    (``DIR/out``, capped) and can be read from any byte offset."""

    __tablename__ = "processes"

    id: str = Field(default_factory=lambda: new_id("prc"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    session_id: str = Field(index=True, max_length=64)
    sandbox_id: str = Field(max_length=32)
    command: str = Field(max_length=8000)
    pid: int | None = None
    dir: str | None = Field(default=None, max_length=300)  # None: started by an older version
    status: str = Field(default="running", max_length=20)
    exit_code: int | None = None
    output_bytes: int = 0
    cpu_seconds: float | None = None
    peak_memory_kb: int | None = None
    started_at: datetime = _ts()
    ended_at: datetime | None = Field(default=None, sa_type=UtcDateTime)


#: How a snapshot keeps its files: ``tar`` (before content addressing: one tar blob, at
#: ``blob_key``) or ``content`` (its manifest names each file's content blob, by hash).
STORAGE_TAR = "tar"
STORAGE_CONTENT = "content"


class Snapshot(SQLModel, table=True):
    """A session's workspace at one moment and, as a checkpoint, what changed since the
    session's previous snapshot. A ``content`` snapshot's ``manifest`` lists every entry with
    its content's hash (see :mod:`sandlot.runtime.manifest`); its files are
    :class:`ContentBlob` rows of its tenant, each referred to by a :class:`SnapshotBlob` row.
    A ``tar`` snapshot (made by older versions) is one tar blob at ``blob_key``."""

    __tablename__ = "snapshots"

    id: str = Field(default_factory=lambda: new_id("snp"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    session_id: str = Field(index=True, max_length=64)
    parent_id: str | None = Field(default=None, max_length=32)
    kind: str = Field(default="checkpoint", max_length=20)
    storage: str = Field(default=STORAGE_CONTENT, max_length=10)
    blob_key: str = Field(default="", max_length=300)
    size_bytes: int = 0  # the files' bytes (a tar snapshot: the tar's)
    file_count: int = 0
    manifest: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    diff: dict[str, Any] = Field(default_factory=dict, sa_type=sa.JSON)
    shell_state: str = Field(default="", max_length=1 << 20)
    created_at: datetime = _ts()


class ContentBlob(SQLModel, table=True):
    """One file content a tenant's snapshots keep, stored once per tenant under its SHA-256.
    Blobs are never shared between tenants: the same bytes of two tenants are two rows and
    two files, so nothing one tenant does can tell it what another has stored."""

    __tablename__ = "content_blobs"

    tenant_id: str = Field(foreign_key="tenants.id", primary_key=True, max_length=32)
    digest: str = Field(primary_key=True, max_length=64)
    size_bytes: int = Field(sa_type=sa.BigInteger)
    blob_key: str = Field(max_length=300)  # this copy's file (each copy has a name of its own)
    created_at: datetime = _ts()


class SnapshotBlob(SQLModel, table=True):
    """A content blob a snapshot needs. Written in the transaction that adds the snapshot; the
    foreign key to ``content_blobs`` is what makes garbage collection safe: a blob deleted
    under a snapshot being committed fails that commit (which then stores the file again),
    and a blob referred to by a committed row cannot be deleted."""

    __tablename__ = "snapshot_blobs"
    __table_args__ = (
        sa.ForeignKeyConstraint(
            ["tenant_id", "digest"],
            ["content_blobs.tenant_id", "content_blobs.digest"],
            name="fk_snapshot_blobs_content",
        ),
        sa.Index("ix_snapshot_blobs_tenant_digest", "tenant_id", "digest"),
    )

    snapshot_id: str = Field(foreign_key="snapshots.id", primary_key=True, max_length=32)
    digest: str = Field(primary_key=True, max_length=64)
    tenant_id: str = Field(max_length=32)


class Asset(SQLModel, table=True):
    """A tenant's uploaded file or tar archive, materialised into workspaces on request."""

    __tablename__ = "assets"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name"),)

    id: str = Field(default_factory=lambda: new_id("ast"), primary_key=True, max_length=32)
    tenant_id: str = Field(foreign_key="tenants.id", index=True, max_length=32)
    name: str = Field(max_length=100)
    kind: str = Field(default="file", max_length=20)
    blob_key: str = Field(max_length=300)
    size_bytes: int = 0
    sha256: str = Field(default="", max_length=64)
    created_at: datetime = _ts()


class AuditEvent(SQLModel, table=True):
    """One state-changing request by a key: who, what, on what, and how it ended."""

    __tablename__ = "audit_events"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = _ts(index=True)
    tenant_id: str = Field(index=True, max_length=32)  # the caller's tenant
    key_id: str = Field(max_length=32)
    operator: bool = False
    action: str = Field(max_length=200)  # method and route template, e.g. "DELETE /v1/sandboxes/{sandbox_id}"
    target: str = Field(default="", max_length=300)  # the object acted on (path ids, or the new id)
    status: int  # the HTTP status answered
    outcome: str = Field(max_length=40)  # "ok", or the error code
    client: str = Field(default="", max_length=64)  # the peer address


class RateBucket(SQLModel, table=True):
    """A key's or a tenant's token bucket (named by its id), shared by every API process: ``tokens``
    as of ``stamp`` (Unix time)."""

    __tablename__ = "rate_buckets"

    key_id: str = Field(primary_key=True, max_length=32)
    tokens: float
    stamp: float
    allowed: bool = True  # whether the last request was let through
