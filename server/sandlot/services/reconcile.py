"""Reconciliation between the store and the runtime, at start-up and then periodically.

A round compares the live sandbox rows with the containers carrying this deployment's labels
and settles every difference, in both directions:

- a container the store does not know, knows as offline, or whose row names another container
  is removed (an orphan);
- a row whose container is gone or stopped (an engine restart stops them all) goes offline
  (a phantom), and so does its container if it is still there;
- a row stuck in a transitional status longer than it could take is finished: a create that
  never completed (the process died) is removed; a shutdown that failed half-way (the engine
  was down) is done again; a session exit or an acquire that never finished is shut down.

Rows are read before containers are listed, so a sandbox started during the round is never
mistaken for an orphan; rows still being created are left alone for a grace period, since
another process may be creating them. A shutdown whose container is gone is finished with its
own reason: another process may be finishing it right now (a reaper's shutdown removes the
container before its row goes offline), or the engine's outage cut it short. One item failing
does not stop the round.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.status import SandboxStatus
from sandlot.runtime.base import LABEL_SANDBOX, OwnedSandbox, SandboxRuntime
from sandlot.store.repositories import ACTIVE, SandboxRepository
from sandlot.store.tables import Sandbox
from sandlot.store.types import utcnow

__all__ = ["STUCK_AFTER", "ReconcileReport", "Reconciler"]

log = logging.getLogger(__name__)

S = SandboxStatus
#: Rows another process may be creating right now, left alone until they are stuck.
_PENDING = (S.CREATED.value, S.SETTING_UP.value)

#: How long a sandbox may sit in a transitional status before a round finishes it.
STUCK_AFTER: dict[str, timedelta] = {
    S.CREATED.value: timedelta(minutes=2),
    S.SETTING_UP.value: timedelta(minutes=2),
    S.ACQUIRED.value: timedelta(minutes=2),
    S.EXITING_SESSION.value: timedelta(minutes=2),
    S.SHUTTING_DOWN.value: timedelta(seconds=30),
}


@dataclass
class ReconcileReport:
    removed_containers: list[str] = field(default_factory=list)
    marked_offline: list[str] = field(default_factory=list)
    finished_stuck: list[str] = field(default_factory=list)


class Shutdown(Protocol):
    def __call__(
        self, sandbox_id: str, reason: str, *, only_if: SandboxStatus | None = None
    ) -> Awaitable[bool]: ...


class Reconciler:
    """``shutdown(sandbox_id, reason, only_if=status)`` takes a sandbox offline through the
    service (removing its container) if it is still in the status this round read; ``lost``
    (sandbox ids) ends the active sessions that held them."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        runtime: SandboxRuntime,
        instance: str,
        *,
        shutdown: Shutdown,
        lost: Callable[[Sequence[str]], Awaitable[object]] | None = None,
        stuck_after: dict[str, timedelta] | None = None,
    ) -> None:
        self._sessions = sessions
        self._runtime = runtime
        self._instance = instance
        self._shutdown = shutdown
        self._lost = lost
        self._stuck_after = stuck_after or STUCK_AFTER

    async def run(self) -> ReconcileReport:
        report = ReconcileReport()
        async with self._sessions() as session:
            listed = await SandboxRepository(session, None).list(statuses=ACTIVE, limit=1_000_000)
        # this deployment's rows only (rows from before the instance was kept count as ours)
        rows = {r.id: r for r in listed if r.instance in (None, self._instance)}
        owned = await self._runtime.list_owned(self._instance)
        alive: set[str] = set()
        for found in owned:
            if await self._settle_container(found, rows, report):
                alive.add(found.labels.get(LABEL_SANDBOX, ""))
        now = utcnow()
        for row in rows.values():
            age = now - row.updated_at
            stuck = age > self._stuck_after.get(row.status, timedelta.max)
            try:
                if row.status in _PENDING and not stuck:
                    continue  # another process may be creating it right now
                # only if no one moved it since it was read: a reaper elsewhere may have started
                # its shutdown and removed the container while this round listed them
                seen = S(row.status)
                if row.id not in alive:
                    # a shutdown under way keeps its reason (``ttl expired``), whoever finishes it
                    why = "container gone (reconciled)"
                    if seen is S.SHUTTING_DOWN and row.status_reason:
                        why = row.status_reason
                    if await self._shutdown(row.id, why, only_if=seen):
                        report.marked_offline.append(row.id)
                elif stuck:
                    why = f"stuck in {row.status} for {int(age.total_seconds())} s"
                    if await self._shutdown(row.id, why, only_if=seen):
                        report.finished_stuck.append(row.id)
            except Exception:
                log.exception("could not reconcile sandbox %s", row.id)
        gone = report.marked_offline + report.finished_stuck
        if gone and self._lost is not None:
            await self._lost(gone)
        if report.removed_containers or gone:
            log.info(
                "reconciled: removed %d stray containers, took %d sandboxes offline (%d were stuck)",
                len(report.removed_containers),
                len(gone),
                len(report.finished_stuck),
            )
        return report

    async def _settle_container(
        self, found: OwnedSandbox, rows: dict[str, Sandbox], report: ReconcileReport
    ) -> bool:
        """Remove ``found`` when the store has no use for it; True when it stays."""
        row = rows.get(found.labels.get(LABEL_SANDBOX, ""))
        keep = (
            row is not None
            and row.runtime_ref in (None, found.ref)
            and (found.running or row.status in _PENDING)
        )
        if keep:
            return True
        try:
            await self._runtime.remove(found.ref)
            report.removed_containers.append(found.ref)
        except Exception:
            log.exception("could not remove stray sandbox %s", found.ref)
        return False
