"""Sandbox orchestration: create, inspect, run commands, move files, delete.

Each step that changes state is its own short transaction, so a slow container start never
holds a database lock, and a crash between steps leaves rows that the reconciler can settle.
Every status change goes through ``SandboxRepository.move`` (the status machine).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.env import validate_env
from sandlot.domain.errors import Conflict, ImageNotFound, InvalidInput, SandboxStateError
from sandlot.domain.keys import Scope
from sandlot.domain.paths import resolve_cwd, resolve_workspace_path
from sandlot.domain.status import IllegalTransition, SandboxStatus
from sandlot.observability.metrics import Metrics
from sandlot.observability.tracing import SandboxSpans, span, traced, traced_env
from sandlot.runtime.base import (
    LABEL_SANDBOX,
    LABEL_TENANT,
    ExecRequest,
    ExecResult,
    FileStream,
    Limits,
    SandboxRuntime,
    SandboxSpec,
    Usage,
)
from sandlot.services.accounts import Principal
from sandlot.services.exec_users import ExecUsers
from sandlot.services.quotas import check_quota, tenant_ttl
from sandlot.services.transfers import Transfers
from sandlot.settings import Settings
from sandlot.store.repositories import SandboxQuery, SandboxRepository
from sandlot.store.tables import Sandbox, SandboxEvent
from sandlot.store.types import utcnow

__all__ = ["NewSandbox", "SandboxQuery", "SandboxService"]

log = logging.getLogger(__name__)
T = TypeVar("T")

S = SandboxStatus
IMAGE_RE = re.compile(r"^[a-z0-9][a-z0-9._/-]{0,254}(:[A-Za-z0-9_.-]{1,128})?(@sha256:[a-f0-9]{64})?$")
_USABLE = (S.READY.value, S.ACQUIRED.value, S.IN_SESSION.value)
Hook = Callable[[Sandbox], Awaitable[None]]  # work on a sandbox of shutdown's (see there)


@dataclass(frozen=True, slots=True)
class NewSandbox:
    """What a client asked for; unset fields take the settings' defaults."""

    image: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    memory_mb: int | None = None
    cpus: float | None = None
    pids: int | None = None
    disk_mb: int | None = None
    network: bool = False
    ttl_seconds: int | None = None
    read_only_root: bool = False


class SandboxService:
    """The one place sandboxes change."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        runtime: SandboxRuntime,
        settings: Settings,
        transfers: Transfers | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self._sessions = sessions
        self.runtime = runtime
        self.settings = settings
        self.transfers = transfers or Transfers(runtime, settings)
        self.exec_users = ExecUsers(sessions, runtime, settings)
        #: this app's metrics, and which span created each sandbox (for background work's links)
        self.metrics = metrics or Metrics()
        self.spans = SandboxSpans()

    # -- reads ------------------------------------------------------------------------------

    async def get(self, principal: Principal, sandbox_id: str) -> Sandbox:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            return await SandboxRepository(session, principal.visible_tenant).get(sandbox_id)

    async def list(self, principal: Principal, query: SandboxQuery | None = None) -> Sequence[Sandbox]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            repo = SandboxRepository(session, principal.visible_tenant)
            return await repo.list(**dataclasses.asdict(query or SandboxQuery()))

    async def events(self, principal: Principal, sandbox_id: str) -> Sequence[SandboxEvent]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            return await SandboxRepository(session, principal.visible_tenant).events(sandbox_id)

    # -- create -----------------------------------------------------------------------------

    def _resolve(self, ask: NewSandbox) -> tuple[str, Limits, int | None]:
        s = self.settings
        image = ask.image or s.default_image
        if not IMAGE_RE.match(image):
            raise InvalidInput(f"invalid image reference {image!r}", field="image")
        validate_env(ask.env)
        limits = Limits(
            memory_mb=ask.memory_mb or s.default_memory_mb,
            cpus=ask.cpus or s.default_cpus,
            pids=ask.pids or s.default_pids,
            disk_mb=ask.disk_mb or s.default_disk_mb,
        )
        ttl = ask.ttl_seconds if ask.ttl_seconds is not None else s.default_ttl_seconds
        if ttl is not None and ttl > s.max_ttl_seconds:
            raise InvalidInput(f"ttl_seconds may be at most {s.max_ttl_seconds}", field="ttl")
        return image, limits, ttl

    async def create(self, principal: Principal, ask: NewSandbox) -> Sandbox:
        principal.require(Scope.SANDBOXES_WRITE)
        image, limits, ttl = self._resolve(ask)
        return await self.provision(principal.tenant_id, image, limits, ttl, ask)

    @traced(
        "sandbox.provision",
        result=lambda row: {"sandbox": row.id},  # known once the sandbox exists
        tenant="tenant_id",
        image="image",
        environment="environment_id",
    )
    async def provision(
        self,
        tenant_id: str,
        image: str,
        limits: Limits,
        ttl: int | None,
        ask: NewSandbox,
        *,
        environment_id: str | None = None,
        extra_labels: Mapping[str, str] | None = None,
        pool_max: tuple[str, int] | None = None,
        for_session: str | None = None,
        setup: Callable[[Sandbox, str], Awaitable[None]] | None = None,
    ) -> Sandbox:
        """Create a sandbox row within the tenant's quota, start its container, and bring it
        to ready, as a ``sandbox.provision`` span. Used for direct sandboxes and for pool
        members alike.

        ``pool_max`` = (environment id, max): refuse with ``NoCapacity`` when that pool already
        has ``max`` live sandboxes of this image; checked under the tenant row lock so two
        processes cannot both pass it. ``for_session``: the sandbox goes straight to
        ``acquired`` for that session instead of ``ready``, so no one else can take it.
        ``setup`` runs while the sandbox is ``setting_up`` (its features' ``setup`` hooks); if
        it fails the sandbox is shut down and the error is a ``SandboxStateError``."""
        if not await self.runtime.image_exists(image):
            raise ImageNotFound(f"image {image!r} is not available on this runtime", image=image)
        row = await self._admit(tenant_id, image, limits, ttl, ask, environment_id, pool_max)
        await self.move(row.id, S.SETTING_UP, "starting container")
        ref = await self._start_container(row, limits, ask, extra_labels)
        if setup is not None:
            await self._set_up(row, ref, setup)
        row = await self._hand_over(row, ref, for_session)
        self.spans.remember(row.id)  # background work on this sandbox links to this span
        return row

    async def _admit(
        self,
        tenant_id: str,
        image: str,
        limits: Limits,
        ttl: int | None,
        ask: NewSandbox,
        environment_id: str | None,
        pool_max: tuple[str, int] | None,
    ) -> Sandbox:
        """Write the sandbox's row (``created``) in the same transaction as the quota check,
        so the row counts against the quota before the lock on the tenant is let go."""
        async with self._sessions.begin() as session:
            await check_quota(
                session, tenant_id, image, limits, network=ask.network, pool_max=pool_max, ttl=ask.ttl_seconds
            )
            ttl = await tenant_ttl(session, tenant_id, ttl)
            now = utcnow()
            row = Sandbox(
                tenant_id=tenant_id,
                image=image,
                status=S.CREATED.value,
                runtime=self.runtime.name,
                instance=self.settings.instance,
                memory_mb=limits.memory_mb,
                cpus=limits.cpus,
                pids=limits.pids,
                disk_mb=limits.disk_mb,
                network=ask.network,
                env=dict(ask.env),
                ttl_seconds=ttl,
                expires_at=now + timedelta(seconds=ttl) if ttl else None,
                environment_id=environment_id,
            )
            await SandboxRepository(session, tenant_id).add(row, "requested")
        return row

    async def _start_container(
        self, row: Sandbox, limits: Limits, ask: NewSandbox, extra_labels: Mapping[str, str] | None
    ) -> str:
        """Start the sandbox's container and return its reference. The row is not locked while
        the container starts (a slow start holds no database lock); one that fails to start
        leaves the sandbox ``offline``."""
        labels = {LABEL_TENANT: row.tenant_id, LABEL_SANDBOX: row.id, **(extra_labels or {})}
        spec = SandboxSpec(
            sandbox_id=row.id,
            tenant_id=row.tenant_id,
            image=row.image,
            limits=limits,
            env=dict(ask.env),
            network=ask.network,
            read_only_root=ask.read_only_root,
            workspace=row.workspace,
            labels=labels,
        )
        try:
            return await self.runtime.create(spec)
        except BaseException as exc:
            await self.move(row.id, S.OFFLINE, f"start failed: {exc}"[:500])
            raise

    async def _set_up(self, row: Sandbox, ref: str, setup: Callable[[Sandbox, str], Awaitable[None]]) -> None:
        """Run ``setup`` on the started container; a sandbox that fails it is removed and
        goes ``offline``, and the caller sees a ``SandboxStateError`` whatever the cause."""
        try:
            await setup(row, ref)
        except Exception as exc:
            await self.runtime.remove(ref)
            await self.move(row.id, S.OFFLINE, f"setup failed: {exc}"[:500], runtime_ref=ref)
            if isinstance(exc, SandboxStateError):
                raise
            raise SandboxStateError(f"sandbox setup failed: {exc}") from exc

    async def _hand_over(self, row: Sandbox, ref: str, for_session: str | None) -> Sandbox:
        """Move the started sandbox to ``ready`` (or ``acquired`` by ``for_session``). A sandbox
        shut down while it started cannot move: its container is removed, the caller gets 409."""
        try:
            if for_session is not None:
                return await self.move(
                    row.id,
                    S.ACQUIRED,
                    f"started for session {for_session}",
                    runtime_ref=ref,
                    session_id=for_session,
                )
            return await self.move(row.id, S.READY, "container started", runtime_ref=ref)
        except IllegalTransition:  # shut down (deleted, reconciled) while it was starting
            await self.runtime.remove(ref)
            raise Conflict(f"sandbox {row.id} was shut down while it started") from None

    async def move(
        self,
        sandbox_id: str,
        target: SandboxStatus,
        reason: str,
        *,
        runtime_ref: str | None = None,
        session_id: str | object | None = ...,
        settle: bool = False,
    ) -> Sandbox:
        with span("sandbox.status", sandbox=sandbox_id, reason=reason, to_status=target.value):
            async with self._sessions.begin() as session:
                repo = SandboxRepository(session, None)
                row = await repo.get(sandbox_id, lock=True)
                if settle and row.status == target.value:  # e.g. a concurrent shutdown finished first
                    return row
                if runtime_ref is not None:
                    row.runtime_ref = runtime_ref
                if session_id is not ...:
                    row.session_id = session_id  # type: ignore[assignment]
                await repo.move(row, target, reason)
                return row

    # -- use --------------------------------------------------------------------------------

    async def usable(self, principal: Principal, sandbox_id: str) -> Sandbox:
        principal.require(Scope.SANDBOXES_WRITE)
        row = await self.get(principal, sandbox_id)
        if row.status not in _USABLE or row.runtime_ref is None:
            raise Conflict(f"sandbox {sandbox_id} is {row.status}", status=row.status)
        return row

    async def _broken_on_failure(self, row: Sandbox, work: Awaitable[T]) -> T:
        """Await ``work`` on the sandbox; a sandbox whose container failed is shut down so it
        is never handed out again."""
        try:
            return await work
        except SandboxStateError as exc:
            log.warning("sandbox %s is broken (%s); shutting it down", row.id, exc)
            try:
                await self.shutdown(row.id, f"broken: {exc}"[:500])
            except Exception:  # the original error matters more to the caller
                log.exception("could not shut down broken sandbox %s", row.id)
            raise

    async def exec(self, principal: Principal, sandbox_id: str, request: ExecRequest) -> ExecResult:
        row = await self.usable(principal, sandbox_id)
        if request.timeout > self.settings.exec_max_timeout or request.timeout <= 0:
            raise InvalidInput(f"timeout must be in (0, {self.settings.exec_max_timeout}]", field="timeout")
        validate_env(request.env)
        assert row.runtime_ref is not None
        await self.exec_users.allow_in(row, request.user)
        cwd = resolve_cwd(row.workspace, request.cwd)
        request = dataclasses.replace(request, env=traced_env(request.env), cwd=cwd)
        with span("sandbox.exec", tenant=row.tenant_id, sandbox=row.id, image=row.image):
            result = await self._broken_on_failure(row, self.runtime.exec(row.runtime_ref, request))
        self.metrics.command.labels("exec").observe(result.duration_ms / 1000)
        return result

    async def write_file(
        self,
        principal: Principal,
        sandbox_id: str,
        path: str,
        chunks: AsyncIterable[bytes],
        size: int | None,
    ) -> tuple[str, int]:
        """Write a file from a stream of ``size`` bytes (None: not announced); where it went
        and its size."""
        row = await self.usable(principal, sandbox_id)
        target = resolve_workspace_path(row.workspace, path)
        written = await self._broken_on_failure(row, self.transfers.write_file(row, target, chunks, size))
        return target, written

    async def read_file(self, principal: Principal, sandbox_id: str, path: str) -> FileStream:
        row = await self.usable(principal, sandbox_id)
        target = resolve_workspace_path(row.workspace, path)
        return await self._broken_on_failure(row, self.transfers.read_file(row, target))

    async def usage(self, principal: Principal, sandbox_id: str) -> Usage:
        """CPU and memory the sandbox uses now, as the host measures them (about a second)."""
        row = await self.get(principal, sandbox_id)
        if row.status == S.OFFLINE.value or row.runtime_ref is None:
            raise Conflict(f"sandbox {sandbox_id} is {row.status}", status=row.status)
        return await self.runtime.usage(row.runtime_ref)

    # -- delete -----------------------------------------------------------------------------

    async def delete(self, principal: Principal, sandbox_id: str) -> None:
        principal.require(Scope.SANDBOXES_WRITE)
        await self.get(principal, sandbox_id)  # 404 for other tenants' ids
        await self.shutdown(sandbox_id, "deleted by client")

    @traced("sandbox.shutdown", sandbox="sandbox_id", reason="reason")
    async def shutdown(
        self, sandbox_id: str, reason: str, *, only_if: SandboxStatus | None = None, first: Hook | None = None
    ) -> bool:
        """Take a sandbox to offline, removing its container, as a ``sandbox.shutdown`` span.
        Idempotent. With ``only_if``, only a sandbox still in that status (checked under the
        row lock); returns whether it was shut down by this call or already offline. ``first``
        runs once it is ``shutting_down`` (no claim takes it now), before its container goes."""
        async with self._sessions.begin() as session:
            repo = SandboxRepository(session, None)
            row = await repo.get(sandbox_id, lock=True)
            if row.status == S.OFFLINE.value:
                return True
            if only_if is not None and row.status != only_if.value:
                return False
            if row.status != S.SHUTTING_DOWN.value:
                await repo.move(row, S.SHUTTING_DOWN, reason)
            # a create interrupted before it recorded the container is reached by its name
            ref = row.runtime_ref or self.runtime.ref_for(row.id)
        if first is not None:
            await first(row)
        await self.runtime.remove(ref)
        await self.move(sandbox_id, S.OFFLINE, reason, settle=True)
        return True

    async def reap_expired(self) -> int:
        """Shut down every sandbox past its ttl; returns how many. One failure skips one item."""
        async with self._sessions() as session:
            expired = await SandboxRepository(session, None).expired(utcnow())
        done = 0
        for row in expired:
            try:
                with span(
                    "reaper.expire_sandbox", root=True, links=self.spans.links([row.id]), sandbox=row.id
                ):
                    await self.shutdown(row.id, "ttl expired")
                done += 1
            except Exception:
                log.exception("could not reap sandbox %s", row.id)
        return done
