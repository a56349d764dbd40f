"""Activity records, written in batches off the request path.

Each feature call appends a record here; a background loop (and every read of the records)
flushes the batch in one transaction that also moves the sessions' ``last_activity_at``. The
request never waits for those writes, which keeps a shell command round trip near the cost of
the command itself. On shutdown the lifespan flushes what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from sandlot.store.repositories import ActivityRepository
from sandlot.store.tables import Activity, Session
from sandlot.store.types import utcnow

__all__ = ["ActivityRecord", "ActivityRecorder"]

log = logging.getLogger(__name__)

_MAX_PENDING = 100_000


@dataclass(slots=True)
class ActivityRecord:
    """One activity as the request path sees it; the table row is built in the flush."""

    tenant_id: str
    session_id: str | None
    sandbox_id: str | None
    feature: str
    name: str
    args_summary: str
    started_at: datetime = field(default_factory=utcnow)
    duration_ms: float = 0.0
    error: str | None = None
    error_code: str | None = None

    def values(self) -> dict[str, object]:
        return {f: getattr(self, f) for f in self.__slots__}


class ActivityRecorder:
    def __init__(self, sessions: async_sessionmaker[AsyncSession]) -> None:
        self._sessions = sessions
        self._pending: list[ActivityRecord] = []
        self._lock = asyncio.Lock()

    def record(self, row: ActivityRecord) -> None:
        if len(self._pending) >= _MAX_PENDING:
            log.error("activity buffer full; dropping the oldest record")
            self._pending.pop(0)
        self._pending.append(row)

    async def flush(self) -> int:
        async with self._lock:
            batch, self._pending = self._pending, []
            if not batch:
                return 0
            latest: dict[str, object] = {}
            for row in batch:
                if row.session_id is not None:
                    latest[row.session_id] = row.started_at
            try:
                async with self._sessions.begin() as session:
                    # A Core multi-row insert: building ORM objects cost more than the write.
                    await session.execute(insert(Activity), [r.values() for r in batch])
                    for session_id, at in latest.items():
                        await session.execute(
                            update(Session)
                            .where(col(Session.id) == session_id)
                            .where(col(Session.last_activity_at) < at)
                            .values(last_activity_at=at)
                        )
            except Exception:
                log.exception("could not write %d activity records; keeping them", len(batch))
                self._pending[:0] = batch
                raise
            return len(batch)

    async def for_session(
        self, tenant_id: str | None, session_id: str, *, limit: int, offset: int
    ) -> Sequence[Activity]:
        await self.flush()
        async with self._sessions() as session:
            return await ActivityRepository(session, tenant_id).for_session(
                session_id, limit=limit, offset=offset
            )
