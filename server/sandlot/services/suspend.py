"""Suspend and resume: parking a session's sandbox and taking it up again.

Suspending snapshots the workspace and shell state, closes this process's shell and stops the
sandbox's processes (``runtime.pause``); the session keeps its sandbox. Resuming continues them
("reattached") or, when the container is gone, shuts the old sandbox down, creates a
replacement for the session, restores the last snapshot and runs the features'
``setup_session`` hooks ("hydrated"). Both hold the session's cluster-wide lock
(:func:`session_lock`), and look at the session's status only once they hold it: two reapers
of two API processes suspend an idle session once, and a resume never interleaves with a
suspend (a thaw before the freeze would leave an active session stopped).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import Conflict, NoCapacity, SandlotError
from sandlot.domain.status import SESSION_ACTIVE as ACTIVE
from sandlot.domain.status import SESSION_ENDED as ENDED
from sandlot.domain.status import SESSION_SUSPENDED as SUSPENDED
from sandlot.domain.status import SandboxStatus as S
from sandlot.domain.status import session_unusable
from sandlot.features.base import SessionContext
from sandlot.observability.tracing import span
from sandlot.runtime.shells import ShellManager
from sandlot.services.environments import EnvironmentService
from sandlot.services.pool_room import make_room
from sandlot.services.pools import PoolService
from sandlot.services.sandboxes import SandboxService
from sandlot.services.snapshots import SnapshotService
from sandlot.store.leader import Exclusive, session_lock
from sandlot.store.repositories import SessionRepository
from sandlot.store.tables import Sandbox, Session
from sandlot.store.types import utcnow

__all__ = ["SuspendResume"]

log = logging.getLogger(__name__)


def _stopped(sess: Session) -> list[int]:
    """The processes the suspend found stopped already (numbers only: it is the store's)."""
    kept = sess.state.get("stopped_before") or []
    return [p for p in kept if isinstance(p, int) and 0 < p < 1 << 31][:256] if isinstance(kept, list) else []


class SuspendResume:
    """Shares the session service's stores, services and its cache of hot sessions."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        environments: EnvironmentService,
        pools: PoolService,
        sandboxes: SandboxService,
        shells: ShellManager,
        snapshots: SnapshotService,
        hot: dict[str, tuple[Session, Sandbox]],
        context: Callable[[Session, Sandbox], SessionContext],
        exclusive: Exclusive,
    ) -> None:
        self._exclusive = exclusive
        self._sessions = sessions
        self._reads = reads
        self._environments = environments
        self._pools = pools
        self._sandboxes = sandboxes
        self._shells = shells
        self.snapshots = snapshots
        self._hot = hot
        self._context = context

    async def suspend(self, session_id: str, reason: str) -> Session:
        """Snapshot the session, then stop its sandbox's processes."""
        async with self._exclusive.hold(session_lock(session_id)):
            async with self._reads() as session:
                sess, box = await SessionRepository(session, None).get_with_sandbox(session_id)
            if sess.status != ACTIVE or box is None or box.runtime_ref is None:
                raise session_unusable(session_id, sess.status)
            tenant, sandbox = sess.tenant_id, box.id
            with span("session.suspend", tenant=tenant, session=session_id, sandbox=sandbox, reason=reason):
                snap = await self.snapshots.take(sess, box, "suspend")
                self._hot.pop(session_id, None)
                await self._shells.park(session_id)
                stopped: Sequence[int] = ()
                try:
                    stopped = await self._sandboxes.runtime.pause(box.runtime_ref)
                    row = await self._set_suspended(session_id, reason, snap.id, stopped)
                except BaseException as exc:
                    self._shells.unpark(session_id)
                    if not isinstance(exc, Conflict):  # (its processes were continued already)
                        await self._thaw_after_failure(session_id, box.runtime_ref, stopped)
                    raise
                self._shells.parked_until_seen(session_id)
                return row

    async def _thaw_after_failure(self, session_id: str, ref: str, stopped: Sequence[int]) -> None:
        """The suspend failed once the freeze may have run (it timed out after stopping them,
        or the store failed to record it): the session stays active, so its processes go on."""
        try:
            await self._sandboxes.runtime.unpause(ref, stopped)
        except Exception:
            log.warning("session %s: could not continue its processes after a failed suspend", session_id)

    async def _set_suspended(
        self, session_id: str, reason: str, snapshot_id: str, stopped: Sequence[int]
    ) -> Session:
        """Record the suspend, unless the session is no longer active (ended meanwhile, which
        the lock should have made impossible): then its processes go on, and 409."""
        async with self._sessions.begin() as session:
            row = await SessionRepository(session, None).get(session_id, lock=True)
            if row.status == ACTIVE:
                row.status = SUSPENDED
                row.end_reason = reason
                when = utcnow().isoformat()
                extra = {"snapshot_id": snapshot_id, "suspended_at": when, "stopped_before": list(stopped)}
                row.state = {**row.state, **extra}
                return row
        box_ref = await self._ref_of(session_id)
        if box_ref is not None:
            await self._sandboxes.runtime.unpause(box_ref, stopped)
        raise session_unusable(session_id, row.status)

    async def _ref_of(self, session_id: str) -> str | None:
        async with self._reads() as session:
            _, box = await SessionRepository(session, None).get_with_sandbox(session_id)
        return box.runtime_ref if box is not None else None

    async def resume(self, sess: Session) -> tuple[Session, str, str | None]:
        """Reattach to the session's sandbox when it is alive; otherwise create a replacement
        and hydrate it from the session's last snapshot. Returns the session, how
        ("reattached" or "hydrated") and the snapshot used."""
        session_id = sess.id
        async with self._exclusive.hold(session_lock(session_id)):
            async with self._reads() as session:
                sess, box = await SessionRepository(session, None).get_with_sandbox(session_id)
            if sess.status == ENDED:
                raise Conflict(
                    f"session {session_id} has ended; start a new one from its snapshot", status=ENDED
                )
            with span("session.resume", tenant=sess.tenant_id, session=session_id) as sp:
                if box is not None and box.runtime_ref is not None and box.status == S.IN_SESSION.value:
                    try:
                        if sess.status == SUSPENDED:
                            await self._sandboxes.runtime.unpause(box.runtime_ref, _stopped(sess))
                        alive = await self._sandboxes.runtime.is_running(box.runtime_ref)
                    except SandlotError:
                        alive = False
                    if alive:
                        row = await self._set_active(session_id, box.id)
                        sp.set_attribute("sandlot.resumed", "reattached")
                        return row, "reattached", None
                sp.set_attribute("sandlot.resumed", "hydrated")
                return await self._hydrate(sess, box)

    async def _set_active(self, session_id: str, sandbox_id: str) -> Session:
        self._shells.unpark(session_id)
        async with self._sessions.begin() as session:
            row = await SessionRepository(session, None).get(session_id, lock=True)
            if row.status == ENDED:
                raise session_unusable(session_id, ENDED)
            row.status = ACTIVE
            row.end_reason = ""
            row.sandbox_id = sandbox_id
            row.last_activity_at = utcnow()
            row.state = {**row.state, "sandbox_id": sandbox_id}
            return row

    async def _hydrate(self, sess: Session, old: Sandbox | None) -> tuple[Session, str, str | None]:
        self._hot.pop(sess.id, None)
        await self._shells.close(sess.id)
        if old is not None and old.status != S.OFFLINE.value:
            await self._sandboxes.shutdown(old.id, f"replaced while resuming session {sess.id}")
        env = await self._environments.cached(None, sess.environment_id)
        snap = await self.snapshots.latest(sess.id)
        try:
            box = await self._pools.create_for(env, sess.image, sess.id)
        except NoCapacity:  # a full pool: an idle member, or the sandbox of another suspended session
            if not await make_room(self._reads, self._sandboxes, self._exclusive, env, sess.image):
                raise
            box = await self._pools.create_for(env, sess.image, sess.id)
        try:
            box = await self._sandboxes.move(box.id, S.IN_SESSION, f"session {sess.id} resumed")
            if snap is not None:
                await self.snapshots.restore(snap, box, sess.id)
            for feat in self._environments.sandbox_features(env, sess.image):
                await feat.setup_session(self._context(sess, box))
            row = await self._set_active(sess.id, box.id)
        except BaseException as exc:
            await self._sandboxes.shutdown(box.id, f"resume failed: {exc}"[:500])
            raise
        return row, "hydrated", snap.id if snap else None
