"""Sessions and their activities, scoped to one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, or_
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from sandlot.domain.errors import Conflict, NotFound
from sandlot.domain.status import SESSION_ACTIVE, SESSION_ENDED
from sandlot.store.tables import (
    Activity,
    Sandbox,
    Session,
)
from sandlot.store.types import utcnow

__all__ = ["ActivityRepository", "SessionRepository"]


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

    async def mark_ended(
        self, session_id: str, reason: str, *, active_only: bool = False
    ) -> tuple[Session, str] | None:
        """Mark the session ended (with ``active_only``, only an active one), under its row
        lock; returns it and its status before, or None when there was nothing to end."""
        row = await self.get(session_id, lock=True)
        previous = row.status
        if previous == SESSION_ENDED or (active_only and previous != SESSION_ACTIVE):
            return None
        row.status = SESSION_ENDED
        row.end_reason = reason
        row.ended_at = utcnow()
        return row, previous

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
