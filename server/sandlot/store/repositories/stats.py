"""The figures behind the console's charts, read from what the store keeps anyway: status
events (acquires, and when sandboxes went offline), sandboxes, and activity records."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, or_
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.status import SandboxStatus
from sandlot.store.tables import Activity, Sandbox, SandboxEvent

__all__ = ["StatsRepository"]

#: At most this many rows per figure (a busy hour is sampled, never read whole).
ROW_LIMIT = 50_000


class StatsRepository:
    """Figures of one tenant (``tenant_id=None``: every tenant)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    async def acquires(self, since: datetime) -> Sequence[tuple[datetime, bool]]:
        """(when, warm) of every sandbox taken into a session since ``since``: warm when it came
        from the pool (ready -> acquired), cold when it was created for the session."""
        query = (
            select(col(SandboxEvent.at), col(SandboxEvent.from_status))
            .where(col(SandboxEvent.to_status) == SandboxStatus.ACQUIRED.value)
            .where(col(SandboxEvent.at) >= since)
        )
        if self.tenant_id is not None:
            query = query.where(col(SandboxEvent.tenant_id) == self.tenant_id)
        rows = (await self.session.execute(query.limit(ROW_LIMIT))).all()
        return [(at, source == SandboxStatus.READY.value) for at, source in rows]

    async def lifetimes(self, since: datetime) -> Sequence[tuple[datetime, datetime | None]]:
        """(created, went offline or None) of the sandboxes alive at some point since ``since``."""
        offline = SandboxStatus.OFFLINE.value
        query = select(col(Sandbox.created_at), col(Sandbox.status), col(Sandbox.updated_at)).where(
            or_(
                col(Sandbox.status) != offline,
                and_(col(Sandbox.status) == offline, col(Sandbox.updated_at) >= since),
            )
        )
        if self.tenant_id is not None:
            query = query.where(col(Sandbox.tenant_id) == self.tenant_id)
        rows = (await self.session.execute(query.limit(ROW_LIMIT))).all()
        return [(created, updated if status == offline else None) for created, status, updated in rows]

    async def command_times(self, since: datetime) -> Sequence[tuple[datetime, float]]:
        """(when, milliseconds) of the shell commands run since ``since``."""
        query = (
            select(col(Activity.started_at), col(Activity.duration_ms))
            .where(col(Activity.feature) == "shell")
            .where(col(Activity.name).in_(("run", "exec")))
            .where(col(Activity.started_at) >= since)
        )
        if self.tenant_id is not None:
            query = query.where(col(Activity.tenant_id) == self.tenant_id)
        return [(at, float(ms)) for at, ms in (await self.session.execute(query.limit(ROW_LIMIT))).all()]
