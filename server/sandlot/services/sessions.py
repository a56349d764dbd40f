"""Sessions: a user's turn on a sandbox from an environment's pool, and feature activities.

This service composes the parts of a session's life and owns ending sessions (a reset hands the
sandbox back to the pool, or it is shut down): suspend and resume are in
:mod:`sandlot.services.suspend`, launching in :mod:`sandlot.services.launch`, the activity call
path in :mod:`sandlot.services.calls`. A ``SandboxStateError`` during an activity ends the
session and shuts its sandbox down; the next session gets a healthy replacement.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import Conflict, SandboxStateError
from sandlot.domain.keys import Scope
from sandlot.domain.paths import resolve_workspace_path
from sandlot.domain.status import SESSION_ACTIVE as ACTIVE
from sandlot.domain.status import SESSION_SUSPENDED as SUSPENDED
from sandlot.domain.status import SandboxStatus as S
from sandlot.domain.status import session_unusable
from sandlot.features.base import Feature, SessionContext, Upload
from sandlot.features.registry import FeatureRegistry
from sandlot.observability.tracing import span, traced
from sandlot.runtime.base import FileStream
from sandlot.runtime.shells import ShellManager
from sandlot.services.accounts import Principal
from sandlot.services.activities import ActivityRecorder
from sandlot.services.assets import AssetService
from sandlot.services.calls import ActivityCalls
from sandlot.services.environments import EnvironmentService
from sandlot.services.expiry import SWEEP_PARALLEL, at_most, due_reason
from sandlot.services.launch import ManifestFile, SessionLauncher, check_client_ref, new_session, one_tenant
from sandlot.services.pools import PoolService
from sandlot.services.sandboxes import SandboxService
from sandlot.services.snapshots import SnapshotService
from sandlot.services.suspend import SuspendResume
from sandlot.settings import Settings
from sandlot.store.leader import Exclusive, session_lock
from sandlot.store.repositories import EnvironmentRepository, SessionRepository
from sandlot.store.tables import Activity, Environment, Sandbox, Session, Snapshot
from sandlot.store.types import utcnow

__all__ = ["ManifestFile", "SessionService"]

log = logging.getLogger(__name__)
T = TypeVar("T")


def _started(started: tuple[Session, bool]) -> dict[str, Any]:
    """The ``session.start`` span's attributes known only once the session has its sandbox."""
    row, warm = started
    return {"session": row.id, "sandbox": row.sandbox_id or "", "image": row.image, "warm": warm}


class SessionService:
    """The one place sessions start, run activities and end."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        environments: EnvironmentService,
        pools: PoolService,
        sandboxes: SandboxService,
        features: FeatureRegistry,
        shells: ShellManager,
        recorder: ActivityRecorder,
        settings: Settings,
        snapshots: SnapshotService,
        assets: AssetService,
        exclusive: Exclusive,
    ) -> None:
        self._sessions = sessions
        self._reads = reads
        self._environments = environments
        self._pools = pools
        self._sandboxes = sandboxes
        self._features = features
        self._shells = shells
        self.recorder = recorder
        self._settings = settings
        self.snapshots = snapshots
        self.assets = assets
        self.transfers = snapshots.transfers
        # suspend, resume and checkpoints hold a session's lock; an end waits for its holder
        self._exclusive = exclusive
        # session id -> (session, sandbox), trusted only while this process's shell for the
        # session is alive (see ShellManager.alive).
        self._hot: dict[str, tuple[Session, Sandbox]] = {}
        self._suspend, self._launcher, self._calls = self._parts()

    def _parts(self) -> tuple[SuspendResume, SessionLauncher, ActivityCalls]:
        """Suspend and resume, launching, the activity call path: on this service's parts."""
        suspend = SuspendResume(
            sessions=self._sessions,
            reads=self._reads,
            environments=self._environments,
            pools=self._pools,
            sandboxes=self._sandboxes,
            shells=self._shells,
            snapshots=self.snapshots,
            hot=self._hot,
            context=self._context,
            exclusive=self._exclusive,
        )
        launcher = SessionLauncher(
            sessions=self._sessions,
            reads=self._reads,
            environments=self._environments,
            pools=self._pools,
            sandboxes=self._sandboxes,
            snapshots=self.snapshots,
            assets=self.assets,
            context=self._context,
            finish=self._finish,
            exclusive=self._exclusive,
        )
        calls = ActivityCalls(
            environments=self._environments,
            shells=self._shells,
            recorder=self.recorder,
            hot=self._hot,
            context=self._context,
            end=self._end,
            reload=self._reload,
            sandbox_lost=self._sandbox_lost,
            metrics=self._sandboxes.metrics,
            exec_users=self._sandboxes.exec_users,
        )
        return suspend, launcher, calls

    def features_of(self, env: Environment) -> dict[str, Feature]:
        return self._environments.features_of(env)

    def _context(self, sess: Session, box: Sandbox) -> SessionContext:
        assert box.runtime_ref is not None
        return SessionContext(
            sandbox_id=box.id,
            ref=box.runtime_ref,
            image=box.image,
            workspace=box.workspace,
            runtime=self._sandboxes.runtime,
            settings=self._settings,
            session_id=sess.id,
            tenant_id=sess.tenant_id,
            shells=self._shells,
            metrics=self._sandboxes.metrics,
        )

    # -- lifecycle ---------------------------------------------------------------------------

    @traced("session.start", result=_started, tenant="principal.tenant_id", environment="environment")
    async def start(
        self,
        principal: Principal,
        environment: str,
        *,
        image: str | None = None,
        feature: str | None = None,
        session_id: str | None = None,
        manifest: Sequence[ManifestFile] = (),
        snapshot_id: str | None = None,
        assets: Sequence[tuple[str, str | None]] = (),
    ) -> tuple[Session, bool]:
        """Start a session; returns it and whether its sandbox came warm from the pool.
        ``snapshot_id``: the workspace and shell state start as that snapshot's. Everything the
        request names is checked before a sandbox is taken (see :mod:`sandlot.services.launch`)."""
        started = time.perf_counter()
        snap = await self.snapshots.get(principal, snapshot_id) if snapshot_id else None
        placed = await self.assets.resolve(principal, assets) if assets else None
        principal.require(Scope.SANDBOXES_WRITE)
        check_client_ref(session_id)
        env = await self._environments.cached(principal.visible_tenant, environment)
        one_tenant(env, snap, placed)
        chosen = self._launcher.pick_image(env, image, feature)
        files = [(resolve_workspace_path("/workspace", f.path), f) for f in manifest]
        row = new_session(env, chosen, session_id)
        if session_id is not None:  # references are the tenant's own: no one else's can collide
            async with self._reads() as session:
                await SessionRepository(session, None).refuse_existing(env.tenant_id, session_id)
        warm = await self._launcher.launch(env, row, snap, placed, files)
        self._sandboxes.metrics.acquire.labels("warm" if warm else "cold").observe(
            time.perf_counter() - started
        )
        return row, warm

    @staticmethod
    def _repo(session: AsyncSession, principal: Principal) -> SessionRepository:
        """The caller's sessions, found by id or by the caller's own references."""
        return SessionRepository(session, principal.visible_tenant, refs_of=principal.tenant_id)

    async def get(self, principal: Principal, session_id: str) -> Session:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            return await self._repo(session, principal).get(session_id)

    async def sandbox_of(self, principal: Principal, session_id: str) -> tuple[Session, Sandbox]:
        """The caller's active session and its sandbox (409 if not active, 502 if it is gone)."""
        principal.require(Scope.SANDBOXES_WRITE)
        async with self._reads() as session:
            sess, box = await self._repo(session, principal).get_with_sandbox(session_id)
        self._shells.seen(session_id, sess.status)
        if sess.status != ACTIVE:
            raise session_unusable(session_id, sess.status)
        if box is None or box.status != S.IN_SESSION.value or box.runtime_ref is None:
            raise SandboxStateError(f"the sandbox of session {session_id} is gone; start a new session")
        return sess, box

    async def list(
        self, principal: Principal, *, statuses: Sequence[str] | None, limit: int, offset: int
    ) -> Sequence[Session]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            repo = SessionRepository(session, principal.visible_tenant)
            return await repo.list(statuses=statuses, limit=limit, offset=offset)

    async def end(self, principal: Principal, session_id: str, reason: str = "ended by client") -> Session:
        principal.require(Scope.SANDBOXES_WRITE)
        row = await self.get(principal, session_id)
        return await self._end(row.id, reason)

    async def _finish(
        self, session_id: str, reason: str, *, active_only: bool = False
    ) -> tuple[Session, str] | None:
        """``SessionRepository.mark_ended`` once a suspend or resume under way has finished (the
        common case, none, costs one statement; waiting holds no request's connection)."""
        name, only = session_lock(session_id), {"active_only": active_only}
        async with self._sessions.begin() as session:
            if await self._exclusive.try_barrier(await session.connection(), name):
                return await SessionRepository(session, None).mark_ended(session_id, reason, **only)
        async with self._exclusive.barrier(name), self._sessions.begin() as session:
            return await SessionRepository(session, None).mark_ended(session_id, reason, **only)

    @traced("session.end", session="session_id", reason="reason")
    async def _end(self, session_id: str, reason: str) -> Session:
        """End the session, then hand its sandbox back to the pool after the features'
        ``teardown_session`` hooks (a sandbox that fails that is shut down instead)."""
        finished = await self._finish(session_id, reason)
        self._hot.pop(session_id, None)
        if finished is None:
            return await self._reload(session_id)
        row, previous = finished
        await self._shells.close(session_id)
        if row.sandbox_id is None:
            return row
        async with self._reads() as session:
            box = await session.get(Sandbox, row.sandbox_id)
            env = await EnvironmentRepository(session, None).get(row.environment_id) if box else None
        if box is None or box.status != S.IN_SESSION.value:
            return row
        try:
            if previous == SUSPENDED and box.runtime_ref is not None:
                await self._sandboxes.runtime.unpause(box.runtime_ref)  # so the reset can run
            box = await self._sandboxes.move(box.id, S.EXITING_SESSION, f"session {session_id}: {reason}")
            ctx = self._context(row, box)
            for feat in self._environments.sandbox_features(env, box.image) if env else ():
                await feat.teardown_session(ctx)
            await self._pools.release(box, env, f"session {session_id}")
        except Exception as exc:  # whatever it was, the sandbox is not handed on
            log.warning("ending session %s: %r; shutting its sandbox down", session_id, exc)
            await self._sandboxes.shutdown(box.id, f"session end failed: {exc!r}"[:500])
        return row

    async def _reload(self, session_id: str) -> Session:
        async with self._reads() as session:
            return await SessionRepository(session, None).get(session_id)

    async def expire(self) -> int:
        """End sessions past their ttl or idle timeout (suspend those whose environment says
        so); returns how many ended. Due sessions are settled at once, a few at a time
        (``SWEEP_PARALLEL``), so one slow reset or snapshot does not hold up the others."""
        await self.recorder.flush()
        now = utcnow()
        async with self._reads() as session:
            live = await SessionRepository(session, None).list(statuses=[ACTIVE, SUSPENDED], limit=1_000_000)
            envs = {e.id: e for e in await EnvironmentRepository(session, None).list()}
        due = [(row, envs.get(row.environment_id)) for row in live]
        work = [(row, env, why) for row, env in due if (why := due_reason(row, env, now))]
        return sum(await at_most(SWEEP_PARALLEL, [self._expire_one(*item) for item in work]))

    async def _expire_one(self, row: Session, env: Environment | None, reason: str) -> int:
        links = self._sandboxes.spans.links([row.sandbox_id] if row.sandbox_id else [])
        try:
            if reason == "idle timeout" and env is not None and env.idle_action == "suspend":
                with span("reaper.suspend_session", root=True, links=links, session=row.id):
                    await self._suspend.suspend(row.id, "idle timeout")
                return 0
            with span("reaper.end_session", root=True, links=links, session=row.id, reason=reason):
                await self._end(row.id, reason)
            return 1
        except Conflict:  # another process's reaper (or the client) settled it first
            return 0
        except Exception:
            log.exception("could not end session %s", row.id)
            return 0

    # -- checkpoints, suspend and resume -------------------------------------------------------

    async def checkpoint(self, principal: Principal, session_id: str) -> Snapshot:
        sess, box = await self.sandbox_of(principal, session_id)
        try:
            async with self._exclusive.hold(session_lock(sess.id)):  # never beside a suspend
                sess, box = await self.sandbox_of(principal, session_id)
                return await self.snapshots.take(sess, box, "checkpoint")
        except SandboxStateError as exc:  # once the lock is free: ending waits for it
            await self._sandbox_lost(sess, box, exc)
            raise

    async def export_workspace(self, principal: Principal, session_id: str) -> AsyncIterator[bytes]:
        sess, box = await self.sandbox_of(principal, session_id)
        return await self._lost_on_failure(sess, box, self.snapshots.export_live(sess, box))

    async def read_file(self, principal: Principal, session_id: str, path: str) -> FileStream:
        """The file at ``path`` in the session's workspace as a stream (``files.read``'s checks)."""
        sess, box = await self.sandbox_of(principal, session_id)
        target = resolve_workspace_path(box.workspace, path)
        return await self._lost_on_failure(sess, box, self.transfers.read_file(box, target))

    async def import_workspace(
        self, principal: Principal, session_id: str, chunks: AsyncIterator[bytes]
    ) -> int:
        sess, box = await self.sandbox_of(principal, session_id)
        return await self._lost_on_failure(sess, box, self.snapshots.import_upload(sess, box, chunks))

    async def _lost_on_failure(self, sess: Session, box: Sandbox, work: Awaitable[T]) -> T:
        """``work`` on the session's sandbox; a sandbox that broke ends the session."""
        try:
            return await work
        except SandboxStateError as exc:
            await self._sandbox_lost(sess, box, exc)
            raise

    async def suspend(self, principal: Principal, session_id: str) -> Session:
        """Snapshot the session, then stop its sandbox's processes (it keeps the sandbox)."""
        sess, _ = await self.sandbox_of(principal, session_id)
        return await self._suspend.suspend(sess.id, "suspended by client")

    async def resume(self, principal: Principal, session_id: str) -> tuple[Session, str, str | None]:
        """Reattach or hydrate (see :meth:`SuspendResume.resume`)."""
        principal.require(Scope.SANDBOXES_WRITE)
        return await self._suspend.resume(await self.get(principal, session_id))

    # -- activities --------------------------------------------------------------------------

    async def call(
        self,
        principal: Principal,
        session_id: str,
        feature_name: str,
        activity_name: str,
        args: Mapping[str, Any],
        upload: Upload | None = None,
    ) -> Any:
        """Run a feature activity in the caller's session (see :mod:`sandlot.services.calls`).
        A session whose shell this process holds is taken from the cache without a read."""
        principal.require(Scope.SANDBOXES_WRITE)
        hot = self._hot.get(session_id) if self._shells.alive(session_id) else None
        box: Sandbox | None
        if hot is not None and (principal.is_operator or hot[0].tenant_id == principal.tenant_id):
            sess, box = hot
        else:
            async with self._reads() as session:
                sess, box = await self._repo(session, principal).get_with_sandbox(session_id)
            self._shells.seen(session_id, sess.status)
        return await self._calls.call(sess, box, feature_name, activity_name, args, upload)

    async def sandboxes_lost(self, sandbox_ids: Sequence[str]) -> None:
        """End the active sessions whose sandboxes the reconciler found gone (a suspended one
        stays: resuming it hydrates a replacement)."""
        wanted = set(sandbox_ids)
        async with self._reads() as session:
            live = await SessionRepository(session, None).list(statuses=[ACTIVE], limit=1_000_000)
        for row in live:
            if row.sandbox_id in wanted:
                self._hot.pop(row.id, None)
                await self._shells.close(row.id, unpark=False)  # (a suspend's park stays)
                await self._finish(row.id, "sandbox lost: its container is gone", active_only=True)

    async def _sandbox_lost(self, sess: Session, box: Sandbox, exc: SandboxStateError) -> None:
        """End the session and shut its broken sandbox down; one suspended meanwhile (its
        processes stopped under a command) keeps both, and the caller gets 409."""
        log.warning("session %s lost its sandbox %s: %s", sess.id, box.id, exc)
        self._hot.pop(sess.id, None)
        # a shell retired by a suspend under way lands here too: its park must stay
        await self._shells.close(sess.id, unpark=False)
        if await self._finish(sess.id, f"sandbox lost: {exc}"[:500], active_only=True) is None:
            fresh = await self._reload(sess.id)
            raise session_unusable(sess.id, fresh.status) from exc
        await self._sandboxes.shutdown(box.id, f"broken during session {sess.id}: {exc}"[:500])

    async def activities(
        self, principal: Principal, session_id: str, *, limit: int, offset: int
    ) -> Sequence[Activity]:
        row = await self.get(principal, session_id)
        return await self.recorder.for_session(principal.visible_tenant, row.id, limit=limit, offset=offset)
