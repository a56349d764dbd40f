"""Start-up reconciliation between the store and the runtime.

Containers labelled as this deployment's but unknown to the store (or whose row is offline)
are removed; rows whose container is gone are marked offline. Rows still being created by
another process are left alone for a grace period.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.status import SandboxStatus
from sandlot.runtime.base import LABEL_SANDBOX, SandboxRuntime
from sandlot.store.repositories import ACTIVE, SandboxRepository
from sandlot.store.types import utcnow

__all__ = ["ReconcileReport", "Reconciler"]

log = logging.getLogger(__name__)

S = SandboxStatus
_PENDING = (S.CREATED.value, S.SETTING_UP.value)


@dataclass
class ReconcileReport:
    removed_containers: list[str] = field(default_factory=list)
    marked_offline: list[str] = field(default_factory=list)


class Reconciler:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        runtime: SandboxRuntime,
        instance: str,
        *,
        pending_grace: timedelta = timedelta(minutes=2),
    ) -> None:
        self._sessions = sessions
        self._runtime = runtime
        self._instance = instance
        self._grace = pending_grace

    async def run(self) -> ReconcileReport:
        report = ReconcileReport()
        owned = await self._runtime.list_owned(self._instance)
        async with self._sessions() as session:
            rows = {
                r.id: r for r in await SandboxRepository(session, None).list(statuses=ACTIVE, limit=1_000_000)
            }
        running_by_sandbox = {}
        for found in owned:
            sandbox_id = found.labels.get(LABEL_SANDBOX, "")
            row = rows.get(sandbox_id)
            if (
                row is None
                or row.runtime_ref not in (None, found.ref)
                or (not found.running and row.status not in _PENDING)
            ):
                try:
                    await self._runtime.remove(found.ref)
                    report.removed_containers.append(found.ref)
                except Exception:
                    log.exception("could not remove stray sandbox %s", found.ref)
                continue
            running_by_sandbox[sandbox_id] = found.ref
        cutoff = utcnow() - self._grace
        for row in rows.values():
            if row.id in running_by_sandbox:
                continue
            if row.status in _PENDING and row.updated_at > cutoff:
                continue  # another process may be creating it right now
            async with self._sessions.begin() as session:
                repo = SandboxRepository(session, None)
                fresh = await repo.get(row.id, lock=True)
                if fresh.status == S.OFFLINE.value:
                    continue
                await repo.move(fresh, S.OFFLINE, "container gone (reconciled at start-up)")
            report.marked_offline.append(row.id)
        if report.removed_containers or report.marked_offline:
            log.info(
                "reconciled: removed %d stray containers, marked %d sandboxes offline",
                len(report.removed_containers),
                len(report.marked_offline),
            )
        return report
