"""Repositories: the only code that writes SQL. They flush, never commit.

A :class:`SandboxRepository` is built for one tenant (or for an operator, ``tenant_id=None``,
who sees every tenant); a lookup of another tenant's id finds nothing, which the API reports
as 404, so ids cannot be probed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from sandlot.domain.errors import Conflict, NotFound
from sandlot.domain.status import SandboxStatus, transition
from sandlot.store.tables import (
    Activity,
    ApiKey,
    Environment,
    Sandbox,
    SandboxEvent,
    Session,
    Tenant,
)
from sandlot.store.types import utcnow

__all__ = [
    "ActivityRepository",
    "ApiKeyRepository",
    "EnvironmentRepository",
    "PoolRepository",
    "SandboxRepository",
    "SessionRepository",
    "TenantRepository",
]

ACTIVE = tuple(s.value for s in SandboxStatus if s not in (SandboxStatus.OFFLINE,))


class TenantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, tenant: Tenant) -> Tenant:
        if await self.by_name(tenant.name) is not None:
            raise Conflict(f"a tenant named {tenant.name!r} exists", name=tenant.name)
        self.session.add(tenant)
        await self.session.flush()
        return tenant

    async def get(self, tenant_id: str) -> Tenant:
        tenant = await self.session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFound(f"no tenant {tenant_id}")
        return tenant

    async def by_name(self, name: str) -> Tenant | None:
        return (await self.session.scalars(select(Tenant).where(col(Tenant.name) == name))).first()

    async def resolve(self, id_or_name: str) -> Tenant:
        tenant = await self.session.get(Tenant, id_or_name) or await self.by_name(id_or_name)
        if tenant is None:
            raise NotFound(f"no tenant {id_or_name!r}")
        return tenant

    async def list(self) -> Sequence[Tenant]:
        return (await self.session.scalars(select(Tenant).order_by(col(Tenant.created_at)))).all()


class ApiKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, key: ApiKey) -> ApiKey:
        self.session.add(key)
        await self.session.flush()
        return key

    async def by_prefix(self, prefix: str) -> ApiKey | None:
        return (await self.session.scalars(select(ApiKey).where(col(ApiKey.prefix) == prefix))).first()

    async def get(self, key_id: str) -> ApiKey:
        key = await self.session.get(ApiKey, key_id)
        if key is None:
            raise NotFound(f"no API key {key_id}")
        return key

    async def list(self, tenant_id: str | None = None) -> Sequence[ApiKey]:
        query = select(ApiKey).order_by(col(ApiKey.created_at))
        if tenant_id is not None:
            query = query.where(col(ApiKey.tenant_id) == tenant_id)
        return (await self.session.scalars(query)).all()

    async def count(self) -> int:
        return (await self.session.scalar(select(func.count()).select_from(ApiKey))) or 0


class SandboxRepository:
    """Sandboxes of one tenant (``tenant_id=None``: all tenants, for operators and loops)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self) -> SelectOfScalar[Sandbox]:
        query = select(Sandbox)
        if self.tenant_id is not None:
            query = query.where(col(Sandbox.tenant_id) == self.tenant_id)
        return query

    async def add(self, sandbox: Sandbox, reason: str) -> Sandbox:
        self.session.add(sandbox)
        await self.session.flush()
        self.session.add(
            SandboxEvent(
                sandbox_id=sandbox.id,
                tenant_id=sandbox.tenant_id,
                to_status=sandbox.status,
                reason=reason,
            )
        )
        await self.session.flush()
        return sandbox

    async def get(self, sandbox_id: str, *, lock: bool = False) -> Sandbox:
        query = self._scoped().where(col(Sandbox.id) == sandbox_id)
        if lock:
            query = query.with_for_update()
        found = (await self.session.scalars(query)).first()
        if found is None:
            raise NotFound(f"no sandbox {sandbox_id}", sandbox_id=sandbox_id)
        return found

    async def list(
        self, *, statuses: Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> Sequence[Sandbox]:
        query = self._scoped().order_by(col(Sandbox.created_at).desc(), Sandbox.id)
        if statuses:
            query = query.where(col(Sandbox.status).in_(statuses))
        return (await self.session.scalars(query.limit(limit).offset(offset))).all()

    async def usage(self) -> tuple[int, int, float]:
        """(count, memory MB, cpus) of the tenant's live sandboxes, for quota checks."""
        query = select(
            func.count(),
            func.coalesce(func.sum(col(Sandbox.memory_mb)), 0),
            func.coalesce(func.sum(col(Sandbox.cpus)), 0.0),
        ).where(col(Sandbox.status).in_(ACTIVE))
        if self.tenant_id is not None:
            query = query.where(col(Sandbox.tenant_id) == self.tenant_id)
        count, memory, cpus = (await self.session.execute(query)).one()
        return int(count), int(memory), float(cpus)

    async def expired(self, now: datetime) -> Sequence[Sandbox]:
        query = self._scoped().where(
            col(Sandbox.expires_at) <= now,
            col(Sandbox.status).in_(ACTIVE),
            col(Sandbox.status) != SandboxStatus.SHUTTING_DOWN.value,
        )
        return (await self.session.scalars(query)).all()

    async def move(self, sandbox: Sandbox, target: SandboxStatus, reason: str) -> Sandbox:
        """Change status through the status machine and record the event."""
        current = SandboxStatus(sandbox.status)
        transition(current, target)
        sandbox.status = target.value
        sandbox.status_reason = reason
        sandbox.updated_at = utcnow()
        self.session.add(
            SandboxEvent(
                sandbox_id=sandbox.id,
                tenant_id=sandbox.tenant_id,
                from_status=current.value,
                to_status=target.value,
                reason=reason,
            )
        )
        await self.session.flush()
        return sandbox

    async def events(self, sandbox_id: str) -> Sequence[SandboxEvent]:
        await self.get(sandbox_id)
        query = select(SandboxEvent).where(col(SandboxEvent.sandbox_id) == sandbox_id)
        query = query.order_by(col(SandboxEvent.id))
        return (await self.session.scalars(query)).all()


class EnvironmentRepository:
    """Environments of one tenant (``tenant_id=None``: all, for background loops)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self) -> SelectOfScalar[Environment]:
        query = select(Environment)
        if self.tenant_id is not None:
            query = query.where(col(Environment.tenant_id) == self.tenant_id)
        return query

    async def add(self, env: Environment) -> Environment:
        if await self.by_name(env.name) is not None:
            raise Conflict(f"an environment named {env.name!r} exists", name=env.name)
        self.session.add(env)
        await self.session.flush()
        return env

    async def by_name(self, name: str) -> Environment | None:
        query = self._scoped().where(col(Environment.name) == name)
        return (await self.session.scalars(query)).first()

    async def get(self, id_or_name: str) -> Environment:
        query = self._scoped().where(col(Environment.id) == id_or_name)
        found = (await self.session.scalars(query)).first() or await self.by_name(id_or_name)
        if found is None:
            raise NotFound(f"no environment {id_or_name!r}")
        return found

    async def list(self) -> Sequence[Environment]:
        return (await self.session.scalars(self._scoped().order_by(col(Environment.name)))).all()

    async def delete(self, env: Environment) -> None:
        await self.session.delete(env)
        await self.session.flush()


class PoolRepository:
    """Pool queries across tenants (pool sandboxes carry their environment id)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def counts(self, environment_id: str) -> dict[tuple[str, str], int]:
        """(image, status) -> number of live sandboxes of an environment."""
        query = (
            select(col(Sandbox.image), col(Sandbox.status), func.count())
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.status) != SandboxStatus.OFFLINE.value)
            .group_by(col(Sandbox.image), col(Sandbox.status))
        )
        rows = (await self.session.execute(query)).all()
        return {(image, status): int(n) for image, status, n in rows}

    async def claim_ready(self, environment_id: str, image: str, session_id: str) -> Sandbox | None:
        """Atomically take one ready sandbox: a row lock that skips rows others hold
        (PostgreSQL), then a compare-and-set on the status (every database)."""
        for _ in range(5):
            query = (
                select(Sandbox)
                .where(col(Sandbox.environment_id) == environment_id)
                .where(col(Sandbox.image) == image)
                .where(col(Sandbox.status) == SandboxStatus.READY.value)
                .order_by(col(Sandbox.created_at))
                .limit(1)
                .with_for_update(skip_locked=True)
            )
            row = (await self.session.scalars(query)).first()
            if row is None:
                return None
            changed = await self.session.execute(
                update(Sandbox)
                .where(col(Sandbox.id) == row.id)
                .where(col(Sandbox.status) == SandboxStatus.READY.value)
                .values(status=SandboxStatus.ACQUIRED.value, session_id=session_id, updated_at=utcnow())
                .execution_options(synchronize_session=False)
            )
            if changed.rowcount == 1:  # type: ignore[attr-defined]
                # The row object is stale after the core UPDATE: set what changed without a
                # second SELECT and without marking it dirty.
                set_committed_value(row, "status", SandboxStatus.ACQUIRED.value)
                set_committed_value(row, "session_id", session_id)
                self.session.add(
                    SandboxEvent(
                        sandbox_id=row.id,
                        tenant_id=row.tenant_id,
                        from_status=SandboxStatus.READY.value,
                        to_status=SandboxStatus.ACQUIRED.value,
                        reason=f"acquired by session {session_id}",
                    )
                )
                await self.session.flush()
                return row
        return None

    async def live(self, environment_id: str) -> Sequence[Sandbox]:
        query = (
            select(Sandbox)
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.status).in_(ACTIVE))
        )
        return (await self.session.scalars(query)).all()


class SessionRepository:
    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self) -> SelectOfScalar[Session]:
        query = select(Session)
        if self.tenant_id is not None:
            query = query.where(col(Session.tenant_id) == self.tenant_id)
        return query

    async def refuse_existing(self, session_id: str) -> None:
        if await self.session.get(Session, session_id) is not None:
            raise Conflict(f"session {session_id!r} exists", session_id=session_id)

    async def add(self, row: Session) -> Session:
        await self.refuse_existing(row.id)
        self.session.add(row)
        await self.session.flush()
        return row

    async def get(self, session_id: str, *, lock: bool = False) -> Session:
        query = self._scoped().where(col(Session.id) == session_id)
        if lock:
            query = query.with_for_update()
        found = (await self.session.scalars(query)).first()
        if found is None:
            raise NotFound(f"no session {session_id!r}", session_id=session_id)
        return found

    async def get_with_sandbox(self, session_id: str) -> tuple[Session, Sandbox | None]:
        """The session and its sandbox in one round trip (the hot path of every activity)."""
        query = (
            select(Session, Sandbox)
            .join(Sandbox, col(Sandbox.id) == col(Session.sandbox_id), isouter=True)
            .where(col(Session.id) == session_id)
        )
        if self.tenant_id is not None:
            query = query.where(col(Session.tenant_id) == self.tenant_id)
        found = (await self.session.execute(query)).first()
        if found is None:
            raise NotFound(f"no session {session_id!r}", session_id=session_id)
        return found[0], found[1]

    async def list(
        self, *, statuses: Sequence[str] | None = None, limit: int = 100, offset: int = 0
    ) -> Sequence[Session]:
        query = self._scoped().order_by(col(Session.created_at).desc())
        if statuses:
            query = query.where(col(Session.status).in_(statuses))
        return (await self.session.scalars(query.limit(limit).offset(offset))).all()


class ActivityRepository:
    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def add(self, row: Activity) -> None:
        self.session.add(row)
        await self.session.flush()

    async def for_session(self, session_id: str, *, limit: int, offset: int) -> Sequence[Activity]:
        query = select(Activity).where(col(Activity.session_id) == session_id)
        if self.tenant_id is not None:
            query = query.where(col(Activity.tenant_id) == self.tenant_id)
        query = query.order_by(col(Activity.id)).limit(limit).offset(offset)
        return (await self.session.scalars(query)).all()
