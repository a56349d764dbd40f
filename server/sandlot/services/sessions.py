"""Sessions: a user's turn on a sandbox from an environment's pool, and feature activities.

Starting a session acquires a sandbox (warm from the pool, or created on demand), runs the
applicable features' ``setup_session`` hooks and materialises the manifest into the workspace.
Ending it runs ``teardown_session`` and hands the sandbox back to the pool after a reset (or
shuts it down when the environment keeps no pool). A ``SandboxStateError`` during an activity
shuts the sandbox down and ends the session; the next session gets a healthy replacement.
Suspend and resume live in :mod:`sandlot.services.parking`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    SandboxStateError,
    SandlotError,
)
from sandlot.domain.keys import Scope
from sandlot.domain.paths import resolve_workspace_path
from sandlot.domain.status import SESSION_ACTIVE, SESSION_ENDED, SESSION_SUSPENDED, SandboxStatus
from sandlot.features.base import Feature, SessionContext
from sandlot.features.registry import FeatureRegistry
from sandlot.observability.metrics import METRICS
from sandlot.observability.tracing import ATTR, SANDBOX_SPANS, span
from sandlot.runtime.shell import ShellManager
from sandlot.services.accounts import Principal
from sandlot.services.activities import ActivityRecord, ActivityRecorder
from sandlot.services.assets import AssetService, resolve_placeholders
from sandlot.services.environments import EnvironmentService
from sandlot.services.parking import SessionParking
from sandlot.services.pools import PoolService
from sandlot.services.sandboxes import SandboxService
from sandlot.services.snapshots import SnapshotService
from sandlot.settings import Settings
from sandlot.store.blobs import one_chunk
from sandlot.store.repositories import EnvironmentRepository, SessionRepository
from sandlot.store.tables import Activity, Asset, Environment, Sandbox, Session, Snapshot, new_id
from sandlot.store.types import utcnow

__all__ = ["ACTIVE", "ENDED", "SUSPENDED", "ManifestFile", "SessionService"]

log = logging.getLogger(__name__)
T = TypeVar("T")

S = SandboxStatus
ACTIVE, SUSPENDED, ENDED = SESSION_ACTIVE, SESSION_SUSPENDED, SESSION_ENDED
_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SERVICE_PREFIX = "ses"


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A file to place in the workspace when the session starts."""

    path: str
    content: bytes


def _summary(args: Mapping[str, Any]) -> str:
    text = json.dumps(args, default=str, sort_keys=True)
    return text if len(text) <= 500 else text[:497] + "..."


class SessionService:
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
        # session id -> (session, sandbox), trusted only while this process's shell for the
        # session is alive (see ShellManager.alive).
        self._hot: dict[str, tuple[Session, Sandbox]] = {}
        self._parking = SessionParking(
            sessions=sessions,
            reads=reads,
            environments=environments,
            pools=pools,
            sandboxes=sandboxes,
            shells=shells,
            snapshots=snapshots,
            hot=self._hot,
            context=self._context,
        )

    # -- helpers -----------------------------------------------------------------------------

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
        )

    def _pick_image(self, env: Environment, image: str | None, feature: str | None) -> str:
        if image is not None:
            if image not in env.images:
                raise InvalidInput(
                    f"image {image!r} is not one of environment {env.name!r}'s images", field="image"
                )
            return image
        if feature is not None:
            wanted = self.features_of(env).get(feature)
            if wanted is None:
                raise InvalidInput(f"environment {env.name!r} has no feature {feature!r}", field="feature")
            for candidate in env.images:
                if wanted.applies_to(candidate):
                    return candidate
            raise InvalidInput(f"no image of {env.name!r} supports feature {feature!r}", field="feature")
        return env.images[0]

    # -- lifecycle ---------------------------------------------------------------------------

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
        ``snapshot_id``: the workspace and shell state start as that snapshot's."""
        started = time.perf_counter()
        with span("session.start", tenant=principal.tenant_id, environment=environment) as sp:
            snap = await self.snapshots.get(principal, snapshot_id) if snapshot_id else None
            placed = await self.assets.resolve(principal, assets) if assets else None
            row, warm = await self._start(
                principal, environment, image, feature, session_id, manifest, snap, placed
            )
            sp.set_attributes(
                {ATTR["session"]: row.id, ATTR["sandbox"]: row.sandbox_id or "", ATTR["image"]: row.image}
            )
            sp.set_attribute(ATTR["warm"], warm)
        METRICS.acquire.labels("warm" if warm else "cold").observe(time.perf_counter() - started)
        return row, warm

    async def _start(
        self,
        principal: Principal,
        environment: str,
        image: str | None,
        feature: str | None,
        session_id: str | None,
        manifest: Sequence[ManifestFile],
        snap: Snapshot | None,
        placed: list[tuple[Asset, str]] | None,
    ) -> tuple[Session, bool]:
        principal.require(Scope.SANDBOXES_WRITE)
        if session_id is not None and (
            not _SESSION_ID_RE.match(session_id) or session_id.startswith(f"{_SERVICE_PREFIX}_")
        ):
            raise InvalidInput(
                f"session_id must be 1-64 of [A-Za-z0-9_.-], not starting with {_SERVICE_PREFIX}_",
                field="session_id",
            )
        env = await self._environments.cached(principal.visible_tenant, environment)
        chosen = self._pick_image(env, image, feature)
        paths = [resolve_workspace_path("/workspace", f.path) for f in manifest]
        sid = new_id(_SERVICE_PREFIX)
        now = utcnow()
        row = Session(
            id=sid,
            client_ref=session_id,
            tenant_id=env.tenant_id,
            environment_id=env.id,
            image=chosen,
            status=ACTIVE,
            state={"environment": env.name, "image": chosen},
            expires_at=now + timedelta(seconds=env.session_ttl_seconds) if env.session_ttl_seconds else None,
        )
        # Warm path: claim a ready sandbox straight into the session and record the session,
        # atomically (one statement on PostgreSQL).
        if session_id is not None:  # references are the tenant's own: no one else's can collide
            async with self._reads() as session:
                await SessionRepository(session, None).refuse_existing(env.tenant_id, session_id)
        box = await self._pools.claim(env, chosen, row, f"session {sid} started")
        warm = box is not None
        try:
            if box is None:
                box = await self._pools.create_for(env, chosen, sid)
                row.sandbox_id = box.id
                async with self._sessions.begin() as session:
                    await SessionRepository(session, None).add(row)
                box = await self._sandboxes.move(box.id, S.IN_SESSION, f"session {sid} started")
            ctx = self._context(row, box)
            if snap is not None:
                await self.snapshots.restore(snap, box, sid)
            if placed:
                await self._place_assets(row, box, placed)
            for feat in self._environments.sandbox_features(env, chosen):
                await feat.setup_session(ctx)
            for path, item in zip(paths, manifest, strict=True):
                await self.transfers.write_file(box, path, one_chunk(item.content), len(item.content))
        except BaseException as exc:
            log.warning("session %s failed to start: %s", sid, exc)
            if box is not None:
                await self._sandboxes.shutdown(box.id, f"session start failed: {exc}"[:500])
            with contextlib.suppress(NotFound):
                await self._finish(sid, f"start failed: {exc}"[:500])
            raise
        return row, warm

    async def _place_assets(self, row: Session, box: Sandbox, placed: list[tuple[Asset, str]]) -> None:
        where = await self.assets.place(box, placed)
        paths = {name: f"{box.workspace.rstrip('/')}/{rel}" for name, rel in where.items()}
        row.state = {**row.state, "assets": paths}
        async with self._sessions.begin() as session:
            stored = await SessionRepository(session, None).get(row.id, lock=True)
            stored.state = {**stored.state, "assets": paths}

    @staticmethod
    def _repo(session: AsyncSession, principal: Principal) -> SessionRepository:
        """The caller's sessions, found by id or by the caller's own references."""
        return SessionRepository(session, principal.visible_tenant, refs_of=principal.tenant_id)

    async def get(self, principal: Principal, session_id: str) -> Session:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            return await self._repo(session, principal).get(session_id)

    async def sandbox_of(self, principal: Principal, session_id: str) -> tuple[Session, Sandbox]:
        """An active session of the caller and the sandbox it holds (409 when the session is
        not active; ``SandboxStateError`` when its sandbox is gone)."""
        principal.require(Scope.SANDBOXES_WRITE)
        async with self._reads() as session:
            sess, box = await self._repo(session, principal).get_with_sandbox(session_id)
        if sess.status != ACTIVE:
            raise Conflict(f"session {session_id} is {sess.status}", status=sess.status)
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

    async def _finish(self, session_id: str, reason: str) -> tuple[Session, str] | None:
        """Mark the session ended; returns it and the status it had, or None if it already
        was ended."""
        async with self._sessions.begin() as session:
            row = await SessionRepository(session, None).get(session_id, lock=True)
            previous = row.status
            if previous == ENDED:
                return None
            row.status = ENDED
            row.end_reason = reason
            row.ended_at = utcnow()
            return row, previous

    async def _end(self, session_id: str, reason: str) -> Session:
        with span("session.end", session=session_id, reason=reason):
            return await self._end_untraced(session_id, reason)

    async def _end_untraced(self, session_id: str, reason: str) -> Session:
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
        except SandlotError as exc:
            log.warning("ending session %s: %s; shutting its sandbox down", session_id, exc)
            await self._sandboxes.shutdown(box.id, f"session end failed: {exc}"[:500])
        return row

    async def _reload(self, session_id: str) -> Session:
        async with self._reads() as session:
            return await SessionRepository(session, None).get(session_id)

    async def expire(self) -> int:
        """End sessions past their ttl or idle timeout; returns how many."""
        await self.recorder.flush()
        now = utcnow()
        async with self._reads() as session:
            live = await SessionRepository(session, None).list(statuses=[ACTIVE, SUSPENDED], limit=1_000_000)
            envs = {e.id: e for e in await EnvironmentRepository(session, None).list()}
        ended = 0
        for row in live:
            env = envs.get(row.environment_id)
            reason = None
            if row.expires_at is not None and row.expires_at <= now:
                reason = "ttl expired"
            elif (
                row.status == ACTIVE
                and env is not None
                and env.idle_timeout_seconds
                and row.last_activity_at + timedelta(seconds=env.idle_timeout_seconds) <= now
            ):
                reason = "idle timeout"
            if reason is None:
                continue
            links = SANDBOX_SPANS.links([row.sandbox_id] if row.sandbox_id else [])
            try:
                if reason == "idle timeout" and env is not None and env.idle_action == "suspend":
                    with span("reaper.suspend_session", root=True, links=links, session=row.id):
                        await self._parking.suspend(row.id, "idle timeout")
                    continue
                with span("reaper.end_session", root=True, links=links, session=row.id, reason=reason):
                    await self._end(row.id, reason)
                ended += 1
            except Exception:
                log.exception("could not end session %s", row.id)
        return ended

    # -- checkpoints, suspend and resume -------------------------------------------------------

    async def checkpoint(self, principal: Principal, session_id: str) -> Snapshot:
        sess, box = await self.sandbox_of(principal, session_id)
        return await self._lost_on_failure(sess, box, self.snapshots.take(sess, box, "checkpoint"))

    async def export_workspace(self, principal: Principal, session_id: str) -> AsyncIterator[bytes]:
        sess, box = await self.sandbox_of(principal, session_id)
        return await self._lost_on_failure(sess, box, self.snapshots.export_live(sess, box))

    async def import_workspace(
        self, principal: Principal, session_id: str, chunks: AsyncIterator[bytes]
    ) -> int:
        sess, box = await self.sandbox_of(principal, session_id)
        return await self._lost_on_failure(sess, box, self.snapshots.import_upload(sess, box, chunks))

    async def _lost_on_failure(self, sess: Session, box: Sandbox, work: Awaitable[T]) -> T:
        """Await ``work`` on the session's sandbox; a sandbox that broke ends the session."""
        try:
            return await work
        except SandboxStateError as exc:
            await self._sandbox_lost(sess, box, exc)
            raise

    async def suspend(self, principal: Principal, session_id: str) -> Session:
        """Snapshot the session, then freeze its sandbox. The session keeps the sandbox (it
        counts against quota) until it is resumed or its TTL ends it."""
        sess, _ = await self.sandbox_of(principal, session_id)
        return await self._parking.suspend(sess.id, "suspended by client")

    async def resume(self, principal: Principal, session_id: str) -> tuple[Session, str, str | None]:
        """Reattach to the session's sandbox when it is alive; otherwise create a replacement
        and hydrate it from the session's last snapshot. Returns the session, how
        ("reattached" or "hydrated") and the snapshot used."""
        principal.require(Scope.SANDBOXES_WRITE)
        return await self._parking.resume(await self.get(principal, session_id))

    # -- activities --------------------------------------------------------------------------

    async def call(
        self,
        principal: Principal,
        session_id: str,
        feature_name: str,
        activity_name: str,
        args: Mapping[str, Any],
    ) -> Any:
        principal.require(Scope.SANDBOXES_WRITE)
        hot = self._hot.get(session_id) if self._shells.alive(session_id) else None
        box: Sandbox | None
        if hot is not None and (principal.is_operator or hot[0].tenant_id == principal.tenant_id):
            sess, box = hot
        else:
            async with self._reads() as session:
                sess, box = await self._repo(session, principal).get_with_sandbox(session_id)
        session_id = sess.id  # from here on the service's id (the caller may have used its own)
        env = await self._environments.cached(None, sess.environment_id)
        if sess.status != ACTIVE:
            raise Conflict(f"session {session_id} is {sess.status}", status=sess.status)
        if box is None or box.status != S.IN_SESSION.value or box.runtime_ref is None:
            await self._end(session_id, "sandbox lost")
            raise SandboxStateError(f"the sandbox of session {session_id} is gone; start a new session")
        feature = self.features_of(env).get(feature_name)
        if feature is None or not feature.applies_to(box.image):
            raise NotFound(f"feature {feature_name!r} is not available in this session")
        spec = feature.activities().get(activity_name)
        if spec is None:
            raise NotFound(f"feature {feature_name!r} has no activity {activity_name!r}")
        args = resolve_placeholders(dict(args), sess.state.get("assets") or {})
        try:
            parsed = spec.args.model_validate(dict(args))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or "args"
            raise InvalidInput(f"{field}: {first['msg']}", field=field) from exc
        record = ActivityRecord(
            tenant_id=sess.tenant_id,
            session_id=sess.id,
            sandbox_id=box.id,
            feature=feature_name,
            name=activity_name,
            args_summary=_summary(args),
        )
        started = time.perf_counter()
        activity_span = span(
            f"activity {feature_name}.{activity_name}",
            tenant=sess.tenant_id,
            environment=env.name,
            image=box.image,
            sandbox=box.id,
            session=sess.id,
            feature=feature_name,
            activity=activity_name,
        )
        try:
            with activity_span:
                result = await spec.method(feature, self._context(sess, box), parsed)
            self._hot[session_id] = (sess, box)
            return result
        except SandlotError as exc:
            record.error, record.error_code = exc.message[:1000], exc.code
            if isinstance(exc, SandboxStateError):
                self._hot.pop(session_id, None)
                fresh = await self._reload(session_id)
                if fresh.status != ACTIVE:  # ended elsewhere: its reset killed our shell
                    await self._shells.close(session_id)
                    raise Conflict(f"session {session_id} is {fresh.status}", status=fresh.status) from exc
                await self._sandbox_lost(sess, box, exc)
            raise
        except Exception as exc:
            record.error, record.error_code = str(exc)[:1000], "internal_error"
            raise
        finally:
            record.duration_ms = (time.perf_counter() - started) * 1000
            self.recorder.record(record)
            outcome = "ok" if record.error_code is None else "error"
            METRICS.activities.labels(feature_name, activity_name, outcome).inc()
            if record.error_code is not None:
                METRICS.activity_errors.labels(feature_name, activity_name, record.error_code).inc()

    async def sandboxes_lost(self, sandbox_ids: Sequence[str]) -> None:
        """End the active sessions whose sandboxes the reconciler found gone (a suspended one
        stays: resuming it hydrates a replacement)."""
        wanted = set(sandbox_ids)
        async with self._reads() as session:
            live = await SessionRepository(session, None).list(statuses=[ACTIVE], limit=1_000_000)
        for row in live:
            if row.sandbox_id in wanted:
                self._hot.pop(row.id, None)
                await self._shells.close(row.id)
                await self._finish(row.id, "sandbox lost: its container is gone")

    async def _sandbox_lost(self, sess: Session, box: Sandbox, exc: SandboxStateError) -> None:
        log.warning("session %s lost its sandbox %s: %s", sess.id, box.id, exc)
        self._hot.pop(sess.id, None)
        await self._shells.close(sess.id)
        await self._finish(sess.id, f"sandbox lost: {exc}"[:500])
        await self._sandboxes.shutdown(box.id, f"broken during session {sess.id}: {exc}"[:500])

    async def activities(
        self, principal: Principal, session_id: str, *, limit: int, offset: int
    ) -> Sequence[Activity]:
        row = await self.get(principal, session_id)
        return await self.recorder.for_session(principal.visible_tenant, row.id, limit=limit, offset=offset)
