"""Repositories: the only code that writes SQL. They flush, never commit.

A :class:`SandboxRepository` is built for one tenant (or for an operator, ``tenant_id=None``,
who sees every tenant); a lookup of another tenant's id finds nothing, which the API reports
as 404, so ids cannot be probed.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import TextualSelect, Update, and_, bindparam, func, or_, text, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
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
        query = self._scoped().where(
            or_(col(Environment.id) == id_or_name, col(Environment.name) == id_or_name)
        )
        found = (await self.session.scalars(query)).first()
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

    async def ready_by_environment(self) -> dict[tuple[str, str], int]:
        """(environment id, image) -> ready sandboxes, over every environment."""
        query = (
            select(col(Sandbox.environment_id), col(Sandbox.image), func.count())
            .where(col(Sandbox.environment_id).is_not(None))
            .where(col(Sandbox.status) == SandboxStatus.READY.value)
            .group_by(col(Sandbox.environment_id), col(Sandbox.image))
        )
        rows = (await self.session.execute(query)).all()
        return {(str(env), image): int(n) for env, image, n in rows}

    async def by_status(self) -> dict[str, int]:
        """Sandboxes per status, every tenant."""
        query = select(col(Sandbox.status), func.count()).group_by(col(Sandbox.status))
        return {status: int(n) for status, n in (await self.session.execute(query)).all()}

    async def claim_ready(
        self, environment_id: str, image: str, into: Session, reason: str
    ) -> Sandbox | None:
        """Atomically take one ready sandbox straight into ``in_session`` for the session
        ``into`` and insert that session; None (and no session row) when none is ready.

        The target comes from a subquery that locks the oldest ready row and skips rows others
        hold (PostgreSQL), guarded by a compare-and-set on the status (every database). Both
        transitions (ready -> acquired -> in_session) are checked by the status machine and
        recorded as events. On PostgreSQL it is one prebuilt statement (data-modifying CTEs),
        so an autocommit session makes it one round trip; elsewhere the caller's transaction
        holds the three writes together.
        """
        transition(SandboxStatus.READY, SandboxStatus.ACQUIRED)
        transition(SandboxStatus.ACQUIRED, SandboxStatus.IN_SESSION)
        postgres = self.session.get_bind().dialect.name == "postgresql"
        for _ in range(5):
            params: dict[str, Any] = {
                "want_env": environment_id,
                "want_image": image,
                "claim_session": into.id,
                "reason": reason,
                "acquired_reason": f"acquired by session {into.id}",
                "now": utcnow(),
            }
            if postgres:
                row = await self._claim_in_one_statement(into, params)
            else:
                row = await self._claim_in_transaction(into, params)
            if row is not None:
                return row
            if not await self._any_ready(environment_id, image):
                return None
            # lost a race for the row we saw; try the next one
        return None

    async def _claim_in_transaction(self, into: Session, params: dict[str, Any]) -> Sandbox | None:
        claim = _claim_update().returning(*_SANDBOX_TABLE.c)
        found = (await self.session.execute(claim, params)).first()
        if found is None:
            return None
        row = Sandbox(**found._mapping)
        into.sandbox_id = row.id
        self.session.add_all(
            [
                SandboxEvent(
                    sandbox_id=row.id,
                    tenant_id=row.tenant_id,
                    from_status=a.value,
                    to_status=b.value,
                    reason=params[why],
                    at=params["now"],
                )
                for a, b, why in _CLAIM_EVENTS
            ]
        )
        await SessionRepository(self.session, None).add(into)
        return row

    async def _claim_in_one_statement(self, into: Session, params: dict[str, Any]) -> Sandbox | None:
        values = {f"s_{c.name}": getattr(into, c.name) for c in _SESSION_COLUMNS if c.name != "sandbox_id"}
        try:
            found = (await self.session.execute(_claim_statement(), {**params, **values})).first()
        except IntegrityError as exc:
            ref = into.client_ref or into.id
            raise Conflict(f"session {ref!r} exists", session_id=ref) from exc
        if found is None:
            return None
        into.sandbox_id = found.id
        return Sandbox(**found._mapping)

    async def _any_ready(self, environment_id: str, image: str) -> bool:
        query = (
            select(col(Sandbox.id))
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.image) == image)
            .where(col(Sandbox.status) == SandboxStatus.READY.value)
            .limit(1)
        )
        return (await self.session.execute(query)).first() is not None

    async def live(self, environment_id: str) -> Sequence[Sandbox]:
        query = (
            select(Sandbox)
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.status).in_(ACTIVE))
        )
        return (await self.session.scalars(query)).all()


class SessionRepository:
    """Sessions of one tenant (``tenant_id=None``: all). A session is found by its id or, within
    ``refs_of`` (default: the tenant), by the reference its client chose."""

    def __init__(self, session: AsyncSession, tenant_id: str | None, *, refs_of: str | None = None) -> None:
        self.session = session
        self.tenant_id = tenant_id
        self.refs_of = refs_of or tenant_id

    def _scoped(self) -> SelectOfScalar[Session]:
        query = select(Session)
        if self.tenant_id is not None:
            query = query.where(col(Session.tenant_id) == self.tenant_id)
        return query

    def _named(self, session_id: str) -> Any:
        by_id = col(Session.id) == session_id
        if self.refs_of is None:
            return by_id
        by_ref = and_(col(Session.client_ref) == session_id, col(Session.tenant_id) == self.refs_of)
        return or_(by_id, by_ref)

    async def refuse_existing(self, tenant_id: str, client_ref: str) -> None:
        query = select(col(Session.id)).where(
            col(Session.tenant_id) == tenant_id, col(Session.client_ref) == client_ref
        )
        if (await self.session.execute(query)).first() is not None:
            raise Conflict(f"session {client_ref!r} exists", session_id=client_ref)

    async def add(self, row: Session) -> Session:
        self.session.add(row)
        try:
            await self.session.flush()
        except IntegrityError as exc:  # a concurrent start took the same reference
            ref = row.client_ref or row.id
            raise Conflict(f"session {ref!r} exists", session_id=ref) from exc
        return row

    async def get(self, session_id: str, *, lock: bool = False) -> Session:
        query = self._scoped().where(self._named(session_id))
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
            .where(self._named(session_id))
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


_CLAIM_EVENTS = (
    (SandboxStatus.READY, SandboxStatus.ACQUIRED, "acquired_reason"),
    (SandboxStatus.ACQUIRED, SandboxStatus.IN_SESSION, "reason"),
)
_SESSION_COLUMNS = list(Session.__table__.c)  # type: ignore[attr-defined]
_SANDBOX_TABLE = Sandbox.__table__  # type: ignore[attr-defined]


def _claim_update() -> Update:
    """``UPDATE`` the oldest ready sandbox of (want_env, want_image) into the session: the row comes
    from a ``FOR UPDATE SKIP LOCKED`` subquery, and the status is compared again."""
    c = _SANDBOX_TABLE.c
    target = (
        core_select(c.id)
        .where(c.environment_id == bindparam("want_env"))
        .where(c.image == bindparam("want_image"))
        .where(c.status == SandboxStatus.READY.value)
        .order_by(c.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return (
        update(_SANDBOX_TABLE)
        .where(c.id == target)
        .where(c.status == SandboxStatus.READY.value)
        .values(
            status=SandboxStatus.IN_SESSION.value,
            status_reason=bindparam("reason"),
            session_id=bindparam("claim_session"),
            updated_at=bindparam("now"),
        )
    )


@functools.cache
def _claim_statement() -> TextualSelect:
    """The PostgreSQL claim as one statement, built once: the claiming ``UPDATE`` (the same
    as :func:`_claim_update`) and the inserts of both status events and of the session row,
    as data-modifying CTEs."""
    ready, acquired, in_session = (
        SandboxStatus.READY.value,
        SandboxStatus.ACQUIRED.value,
        SandboxStatus.IN_SESSION.value,
    )
    box_columns = ", ".join(c.name for c in _SANDBOX_TABLE.c)
    session_names = [c.name for c in _SESSION_COLUMNS]
    session_values = ", ".join("id" if n == "sandbox_id" else f":s_{n}" for n in session_names)
    sql = f"""
WITH claimed AS (
  UPDATE sandboxes
     SET status = '{in_session}', status_reason = :reason, session_id = :claim_session, updated_at = :now
   WHERE id = (SELECT id FROM sandboxes
                WHERE environment_id = :want_env AND image = :want_image AND status = '{ready}'
                ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
     AND status = '{ready}'
  RETURNING {box_columns}
), events AS (
  INSERT INTO sandbox_events (sandbox_id, tenant_id, from_status, to_status, reason, at)
  SELECT id, tenant_id, '{ready}', '{acquired}', :acquired_reason, :now FROM claimed
  UNION ALL
  SELECT id, tenant_id, '{acquired}', '{in_session}', :reason, :now FROM claimed
), new_session AS (
  INSERT INTO sessions ({", ".join(session_names)}) SELECT {session_values} FROM claimed
)
SELECT {box_columns} FROM claimed
"""
    binds = [bindparam(f"s_{c.name}", type_=c.type) for c in _SESSION_COLUMNS if c.name != "sandbox_id"]
    binds.append(bindparam("now", type_=_SANDBOX_TABLE.c.updated_at.type))
    return text(sql).bindparams(*binds).columns(*_SANDBOX_TABLE.c)
