"""Sandboxes and their status events, scoped to one tenant (or an operator)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from sandlot.domain.errors import NotFound
from sandlot.domain.status import SandboxStatus, transition
from sandlot.store.tables import (
    Sandbox,
    SandboxEvent,
)
from sandlot.store.types import utcnow

__all__ = ["ACTIVE", "SandboxQuery", "SandboxRepository"]

ACTIVE = tuple(s.value for s in SandboxStatus if s not in (SandboxStatus.OFFLINE,))


@dataclass(frozen=True, slots=True)
class SandboxQuery:
    """Which sandboxes a listing shows, and in what order."""

    statuses: Sequence[str] | None = None
    limit: int = 100
    offset: int = 0
    image: str | None = None
    by_last_event: bool = False
    tenant: str | None = None  # a tenant id (an operator's filter; a tenant's scope is its own)
    environment: str | None = None  # an environment id
    created_after: datetime | None = None
    created_before: datetime | None = None


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
        self,
        *,
        statuses: Sequence[str] | None = None,
        limit: int = 100,
        offset: int = 0,
        image: str | None = None,
        by_last_event: bool = False,
        tenant: str | None = None,
        environment: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
    ) -> Sequence[Sandbox]:
        """Newest first (``by_last_event``: the most recently changed first)."""
        order = col(Sandbox.updated_at if by_last_event else Sandbox.created_at).desc()
        query = self._scoped().order_by(order, Sandbox.id)
        if statuses:
            query = query.where(col(Sandbox.status).in_(statuses))
        matches = ((Sandbox.image, image), (Sandbox.tenant_id, tenant), (Sandbox.environment_id, environment))
        for column, value in matches:
            if value:
                query = query.where(col(column) == value)
        if created_after is not None:
            query = query.where(col(Sandbox.created_at) >= created_after)
        if created_before is not None:
            query = query.where(col(Sandbox.created_at) < created_before)
        return (await self.session.scalars(query.limit(limit).offset(offset))).all()

    async def by_status(self) -> dict[str, int]:
        """The tenant's sandboxes per status (offline ones included)."""
        query = select(col(Sandbox.status), func.count()).group_by(col(Sandbox.status))
        if self.tenant_id is not None:
            query = query.where(col(Sandbox.tenant_id) == self.tenant_id)
        return {status: int(n) for status, n in (await self.session.execute(query)).all()}

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
