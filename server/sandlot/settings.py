"""Typed settings, read from ``SANDLOT_*`` environment variables (or passed in directly).

Nothing reads the environment at import time: ``Settings()`` is built by the CLI or the tests
and handed to ``create_app(settings)``. Fields are grouped by concern; every one is documented
in the README's settings table.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from sandlot.domain.users import check_user_name

__all__ = ["Mode", "RuntimeKind", "Settings"]


class RuntimeKind(StrEnum):
    AUTO = "auto"
    DOCKER = "docker"
    LOCAL = "local"


class Mode(StrEnum):
    DEVELOPMENT = "development"
    PRODUCTION = "production"


class Settings(BaseSettings):
    """Sandlot's configuration."""

    model_config = SettingsConfigDict(env_prefix="SANDLOT_", extra="ignore")

    # -- service ---------------------------------------------------------------------------
    mode: Mode = Field(
        default=Mode.DEVELOPMENT,
        description="`production` refuses the unisolated local runtime unless allowed.",
    )
    host: str = Field(default="127.0.0.1", description="Address the HTTP server binds.")
    port: int = Field(default=8480, ge=0, le=65535, description="Port the HTTP server binds.")
    workers: int = Field(default=1, ge=1, description="Granian worker processes.")
    data_dir: Path = Field(
        default=Path(".sandlot"),
        description="Where the embedded store, local sandboxes and blobs live (a relative one is "
        "taken from where the service starts, once).",
    )
    boot_id: str = Field(
        default="",
        max_length=64,
        description="Set by `sandlot serve` for each start; `/healthz` reports it, so the start "
        "command knows its own workers answer. Not for users to set.",
    )
    instance: str = Field(
        default="",
        pattern=r"^[A-Za-z0-9_.-]{0,63}$",
        description="Deployment name put on every container label; reconciliation only "
        "touches containers carrying it. Empty: derived from the database URL, so processes "
        "sharing a database agree and deployments with different databases never collide.",
    )

    # -- store -----------------------------------------------------------------------------
    database_url: str = Field(
        default="",
        description="SQLAlchemy URL. Empty: a SQLite file in the data dir. postgresql://... uses asyncpg.",
    )
    migrate_on_start: bool = Field(
        default=True, description="Apply pending migrations when the service starts."
    )
    database_pool_size: int = Field(
        default=20,
        ge=1,
        le=500,
        description="PostgreSQL connections each API process keeps open; a request waits for one "
        "when all are busy (a request's statements hold one for a moment). Opening a connection "
        "costs the database more CPU than the few statements a request runs on it.",
    )
    database_max_overflow: int = Field(
        default=0,
        ge=0,
        le=500,
        description="PostgreSQL connections an API process may open beyond the pool, each closed "
        "after its use: a burst then opens and closes them over and over (measured: 50 acquires "
        "at once cost the database 4 ms of CPU each with 20 more, 1.3 ms with none).",
    )

    # -- runtime ---------------------------------------------------------------------------
    runtime: RuntimeKind = Field(
        default=RuntimeKind.AUTO,
        description="`docker`, `local`, or `auto` (Docker when its engine answers, else local).",
    )
    docker_url: str | None = Field(
        default=None, description="Docker engine URL; default: DOCKER_HOST or the local socket."
    )
    network_guard_image: str = Field(
        default="sandlot/busybox:latest",
        description="Image (with busybox's `ip`) whose short-lived container closes the host's "
        "addresses and link-local ones in each sandbox with network access; without it on the "
        "engine, `network: true` is refused.",
    )
    allow_unisolated: bool = Field(
        default=False,
        description="Allow the local runtime without bubblewrap isolation in production mode.",
    )

    # -- sandboxes -------------------------------------------------------------------------
    default_image: str = Field(default="sandlot/busybox:latest", description="Image if none given.")
    default_memory_mb: int = Field(default=512, ge=16, description="Memory limit per sandbox.")
    default_cpus: float = Field(default=1.0, gt=0, description="CPU limit per sandbox.")
    default_pids: int = Field(default=256, ge=8, description="Process limit per sandbox.")
    default_disk_mb: int = Field(
        default=2048,
        ge=16,
        description="Disk limit per sandbox (its workspace, /tmp and every other writable place), "
        "where the Docker engine's storage can enforce it (btrfs, zfs, overlay2 on xfs).",
    )
    default_ttl_seconds: int | None = Field(
        default=3600, ge=1, description="Lifetime of a sandbox with no ttl of its own; empty: none."
    )
    max_ttl_seconds: int = Field(default=7 * 24 * 3600, ge=1, description="Longest ttl allowed.")

    # -- limits ----------------------------------------------------------------------------
    max_request_bytes: int = Field(
        default=1 << 20, ge=1024, description="Largest JSON request body (413 beyond)."
    )
    max_file_bytes: int = Field(
        default=100 << 20, ge=1024, description="Largest file uploaded or downloaded (413 beyond)."
    )
    client_max_open: int = Field(
        default=256,
        ge=1,
        description="Requests and WebSockets one client address may have open at once in an API "
        "process; beyond, a request is answered 429 and its connection closed before its body is "
        "read, a WebSocket is refused at its handshake.",
    )
    key_max_websockets: int = Field(
        default=64,
        ge=1,
        description="WebSockets (terminals, process streams) one API key may hold open at once in "
        "an API process (429 at the handshake beyond).",
    )
    header_read_timeout: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="Seconds a client has to send a request's headers; the connection is closed after that.",
    )
    body_read_timeout: float = Field(
        default=10.0,
        gt=0,
        le=3600,
        description="Seconds a request's body may go without a byte arriving, and the grace before "
        "`body_min_rate` applies; a slower body is answered 408 and its connection closed.",
    )
    body_min_rate: int = Field(
        default=4096,
        ge=1,
        description="Bytes a second a request's body must average once its `body_read_timeout` "
        "grace is spent (a 100 MB upload may take 100e6/4096 s + the grace).",
    )
    rate_limit_per_second: float = Field(
        default=500.0,
        ge=0,
        description="Requests a second each API key may make, on average, across every API "
        "process (429 with Retry-After beyond). 0: no limit.",
    )
    rate_limit_burst: int = Field(
        default=1000, ge=1, description="Requests a key may make at once before the rate applies."
    )
    tenant_rate_limit_per_second: float = Field(
        default=1000.0,
        ge=0,
        description="Requests a second all of a tenant's keys together may make, on average, "
        "across every API process (429 beyond): more keys do not mean more requests. 0: no limit.",
    )
    tenant_rate_limit_burst: int = Field(
        default=2000, ge=1, description="Requests a tenant's keys may make at once before its rate applies."
    )
    exec_output_limit: int = Field(
        default=8 << 20,
        ge=1024,
        description="Bytes of stdout and of stderr kept per command; the rest is discarded "
        "and the result says `truncated`.",
    )
    exec_max_timeout: float = Field(default=3600, gt=0, description="Longest command timeout.")
    exec_users_allowed: list[str] = Field(
        default_factory=list,
        max_length=64,
        description="Users an environment may let commands run as (its `exec_users`), e.g. "
        '`["root"]` (JSON in the environment variable). Empty: every command runs as its image\'s '
        "user. Such a user keeps no capability (all are dropped) and its sandbox is never reused "
        "by another session.",
    )
    max_arguments_bytes: int = Field(
        default=4 << 20,
        ge=1024,
        description="Largest arguments part (JSON: a command's argv, env...) of a streamed call, "
        "whose stdin or file content follows it in the same body (the kernel takes about 2 MiB "
        "of arguments per command).",
    )
    max_snapshot_bytes: int = Field(
        default=1 << 30, ge=1 << 20, description="Largest workspace archive a snapshot may take."
    )
    process_output_limit: int = Field(
        default=32 << 20,
        ge=1024,
        description="Bytes of a background process's output kept (in the sandbox, on its tmpfs); "
        "the rest is read and dropped so the process carries on.",
    )
    process_live_relay: bool = Field(
        default=True,
        description="On Docker, relay a background process's kept output to this API process as it "
        "is written (its start exec stays attached), so live readers served here get it without a "
        "follower in the sandbox; off, every reader follows the stored output.",
    )

    # -- background loops ------------------------------------------------------------------
    reaper_enabled: bool = Field(default=True, description="Shut down expired sandboxes.")
    reaper_interval: float = Field(default=5.0, gt=0, description="Seconds between reaper sweeps.")
    pool_enabled: bool = Field(default=True, description="Keep warm pools topped up and healthy.")
    pool_interval: float = Field(
        default=1.0,
        gt=0,
        description="Seconds between pool rounds (each environment also has its own housekeeping interval).",
    )
    pool_check_interval: float = Field(
        default=30.0,
        gt=0,
        description="Seconds between the features' housekeeping checks (the shell's keepalive) of one "
        "idle pool sandbox. Rounds in between (every environment's housekeeping interval) only "
        "replace dead sandboxes and refill: a keepalive of each of 50 idle sandboxes every second "
        "was work competing with the sessions being started.",
    )
    pool_warm_shells: bool = Field(
        default=True,
        description="Open each ready pool sandbox's persistent shell while it waits in the pool, so "
        "a session's first command does not wait for one to open (costs one idle shell per ready "
        "sandbox, held by the process that made it ready).",
    )
    pool_claims_at_once: int = Field(
        default=4,
        ge=1,
        le=1000,
        description="Warm claims (the statement that hands a session a pool sandbox) that run at "
        "once in this process; the others wait their turn, first come first served. Under a burst "
        "each session then starts in turn instead of all of them near the end (50 at once on "
        "2 cores: p50 from ~100 to ~80 ms); it also bounds the connections claims hold.",
    )
    shell_channels: bool = Field(
        default=True,
        description="Run the service's own programs in a sandbox (file reads and writes, process "
        "status and output, checks) in the persistent shell this process holds there when no "
        "command runs in it, and a session's one-shot commands (`shell.exec`) from a shell kept "
        "for them, instead of a `docker exec` each (1-7 ms against ~50 ms of engine CPU).",
    )
    activity_flush_interval: float = Field(
        default=0.5, gt=0, description="Seconds between writes of buffered activity records and audit events."
    )
    reconcile_on_start: bool = Field(
        default=True, description="Reconcile the store and the runtime once at start-up."
    )
    reconcile_enabled: bool = Field(
        default=True,
        description="Reconcile periodically: remove containers the store has no use for, take "
        "sandboxes whose container is gone (or stuck in a transitional status) offline.",
    )
    reconcile_interval: float = Field(
        default=15.0, gt=0, description="Seconds between reconciliation rounds."
    )
    snapshot_gc_enabled: bool = Field(
        default=True,
        description="Collect snapshot contents no snapshot needs any more (their snapshots deleted) "
        "and files a failed snapshot left behind.",
    )
    snapshot_gc_interval: float = Field(
        default=300.0, gt=0, description="Seconds between collections of snapshot contents."
    )
    snapshot_gc_grace_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="A content no snapshot needs is collected once it was stored this long ago "
        "(a file no row names: this long and at least an hour).",
    )

    # -- auth ------------------------------------------------------------------------------
    auth_cache_seconds: float = Field(
        default=2.0,
        ge=0,
        description="How long a checked key is trusted without a database lookup; a revocation "
        "takes effect at once in the process that made it and within this time elsewhere.",
    )

    # -- console ---------------------------------------------------------------------------
    console_secret: str = Field(
        default="",
        description="Signs the console's CSRF tokens. Empty: a random secret kept in the data "
        "directory (set one when several nodes serve the console).",
    )
    console_session_hours: float = Field(
        default=12.0, gt=0, le=24 * 30, description="How long a console sign-in lasts."
    )
    console_trace_url: str = Field(
        default="",
        max_length=2000,
        description="A trace viewer's search URL for one session, with {session_id} where its id "
        "goes (Jaeger: http://localhost:16686/search?service=sandlot&tags=%7B%22sandlot.session_id"
        "%22%3A%22{session_id}%22%7D). Empty: no trace links.",
    )
    console_secure_cookie: bool = Field(
        default=False, description="Send the console's cookies over HTTPS only (set behind TLS)."
    )
    console_sign_in_attempts: int = Field(
        default=10,
        ge=1,
        description="Failed console sign-ins one client address may make in an API process before "
        "it must wait `console_sign_in_window` seconds with none (429 meanwhile).",
    )
    console_sign_in_window: float = Field(
        default=300.0, gt=0, le=86400, description="Seconds of the console sign-in throttle's window."
    )

    # -- observability ---------------------------------------------------------------------
    otel_exporter: Literal["none", "otlp-http", "otlp-grpc", "console"] = Field(
        default="none",
        description="Where traces go. none: tracing off (no middleware, non-recording spans).",
    )
    otel_endpoint: str = Field(
        default="",
        description="OTLP collector endpoint (http: base URL such as http://collector:4318; "
        "grpc: host:4317). Empty: the exporter's default / OTEL_EXPORTER_OTLP_ENDPOINT.",
    )
    otel_insecure: bool = Field(default=True, description="OTLP over gRPC without TLS.")
    otel_service_name: str = Field(default="sandlot", description="service.name of the traces.")
    otel_sample_ratio: float = Field(
        default=1.0, ge=0, le=1, description="Share of new traces sampled (a parent's decision wins)."
    )
    metrics_enabled: bool = Field(default=True, description="Serve Prometheus metrics at /metrics.")
    log_format: Literal["text", "json"] = Field(
        default="text", description="json: one JSON object per line, with trace and span ids."
    )
    log_level: str = Field(default="INFO", description="Root log level.")

    # -- bootstrap -------------------------------------------------------------------------
    bootstrap_operator_key: bool = Field(
        default=True,
        description="On first start with an empty store, create an operator key and print it.",
    )

    @field_validator("exec_users_allowed")
    @classmethod
    def _user_names(cls, users: list[str]) -> list[str]:
        for user in users:
            check_user_name(user, "exec_users_allowed")  # an InvalidInput is a ValueError
        return users

    @model_validator(mode="after")
    def _derived(self) -> Settings:
        # made absolute once, here: child processes (bubblewrap) run in other directories
        self.data_dir = self.data_dir.expanduser().absolute()
        if not self.database_url:
            self.database_url = f"sqlite+aiosqlite:///{self.data_dir / 'sandlot.db'}"
        if not self.instance:
            digest = hashlib.sha256(self.database_url.encode()).hexdigest()[:12]
            self.instance = f"db-{digest}"
        return self
