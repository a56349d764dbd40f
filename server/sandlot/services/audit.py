"""Accountability for every key: the audit trail of the state changes keys make (the rate limit
per key is :mod:`sandlot.services.rate_limits`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.keys import Scope
from sandlot.services.accounts import Principal
from sandlot.store.repositories import AuditRepository
from sandlot.store.tables import AuditEvent
from sandlot.store.types import utcnow

__all__ = ["AuditEntry", "AuditService"]

log = logging.getLogger(__name__)
_MAX_PENDING = 100_000  # events kept while the store cannot take them, at most


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One state-changing request by a key, as the ``Accountable`` middleware saw it (the
    columns of ``audit_events``; a plain record, not a table row: building SQLModel rows for
    a burst's events cost more CPU than writing them)."""

    tenant_id: str
    key_id: str
    operator: bool
    action: str
    target: str
    status: int
    outcome: str
    client: str
    at: datetime = field(default_factory=utcnow)

    def row(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


class AuditService:
    """The trail of state changes: recorded for every key (written in batches by the
    ``audit`` loop, and once more at shutdown); operators list every tenant's, a tenant's key
    lists its own tenant's."""

    def __init__(
        self, writes: async_sessionmaker[AsyncSession], reads: async_sessionmaker[AsyncSession]
    ) -> None:
        self._writes = writes
        self._reads = reads
        self._pending: list[AuditEntry] = []
        self._lock = asyncio.Lock()

    def record(self, event: AuditEntry) -> None:
        """Keep one event; it is written with the others of the moment by :meth:`flush` (the
        request it describes is already answered: its write is off the request's path)."""
        if len(self._pending) >= _MAX_PENDING:
            log.error("audit buffer full; dropping the oldest event")
            self._pending.pop(0)
        self._pending.append(event)

    async def flush(self) -> int:
        """Write the events kept since the last flush in one statement; on failure they are
        kept for the next one."""
        async with self._lock:
            batch, self._pending = self._pending, []
            if not batch:
                return 0
            try:
                async with self._writes.begin() as session:
                    await AuditRepository(session, None).add_many([e.row() for e in batch])
            except Exception:
                log.exception("could not write %d audit events; keeping them", len(batch))
                self._pending[:0] = batch
                raise
            return len(batch)

    async def list(
        self,
        principal: Principal,
        *,
        tenant: str | None = None,
        key_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> Sequence[AuditEvent]:
        principal.require(Scope.SANDBOXES_READ)
        with contextlib.suppress(Exception):  # this process's own events first (logged if not)
            await self.flush()
        scope = (tenant or None) if principal.is_operator else principal.tenant_id
        async with self._reads() as session:
            return await AuditRepository(session, scope).list(limit=limit, offset=offset, key_id=key_id)
