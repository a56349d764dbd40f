"""Launching a session: the sandbox it gets and the steps that make that sandbox ready for it.

A session takes a warm sandbox from its environment's pool when one is ready, or one created on
demand. Then the snapshot it starts from is restored, its assets are placed, the features'
``setup_session`` hooks run and the manifest is written into the workspace. A launch that fails
on the way shuts the sandbox down and ends the session, so neither outlives it. Kept apart from
:class:`~sandlot.services.sessions.SessionService`, which validates the request, opens the
``session.start`` span and composes this back in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import InvalidInput, NoCapacity, NotFound, QuotaExceeded
from sandlot.domain.status import SESSION_ACTIVE as ACTIVE
from sandlot.domain.status import SandboxStatus as S
from sandlot.features.base import SessionContext
from sandlot.runtime.bridge import one_chunk
from sandlot.services.assets import AssetService
from sandlot.services.environments import EnvironmentService
from sandlot.services.pool_room import give_way, make_room
from sandlot.services.pools import PoolService
from sandlot.services.quotas import check_sessions, refuse_sessions
from sandlot.services.sandboxes import SandboxService
from sandlot.services.snapshots import SnapshotService
from sandlot.store.leader import Exclusive
from sandlot.store.repositories import SessionRepository
from sandlot.store.tables import Asset, Environment, Sandbox, Session, Snapshot, new_id
from sandlot.store.types import utcnow

__all__ = ["ManifestFile", "SessionLauncher", "check_client_ref", "new_session", "one_tenant"]

log = logging.getLogger(__name__)

_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SERVICE_PREFIX = "ses"
#: How long a start waits for pool members on their way to ready when the pool is full.
_COMING_WAIT = 10.0


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A file to place in the workspace when the session starts."""

    path: str
    content: bytes


def check_client_ref(session_id: str | None) -> None:
    """Refuse a client's own session reference that could be mistaken for a service id (or
    is not a short plain name)."""
    if session_id is not None and (
        not _SESSION_ID_RE.match(session_id) or session_id.startswith(f"{_SERVICE_PREFIX}_")
    ):
        raise InvalidInput(
            f"session_id must be 1-64 of [A-Za-z0-9_.-], not starting with {_SERVICE_PREFIX}_",
            field="session_id",
        )


def new_session(env: Environment, image: str, client_ref: str | None) -> Session:
    """The row of a session about to start on ``image`` (not stored yet: the warm path stores
    it in the same statement that claims its sandbox)."""
    sid = new_id(_SERVICE_PREFIX)
    now = utcnow()
    return Session(
        id=sid,
        client_ref=client_ref,
        tenant_id=env.tenant_id,
        environment_id=env.id,
        image=image,
        status=ACTIVE,
        state={"environment": env.name, "image": image},
        expires_at=now + timedelta(seconds=env.session_ttl_seconds) if env.session_ttl_seconds else None,
    )


class SessionLauncher:
    """Shares the session service's stores and services; ``finish`` marks a session ended."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession],
        environments: EnvironmentService,
        pools: PoolService,
        sandboxes: SandboxService,
        snapshots: SnapshotService,
        assets: AssetService,
        context: Callable[[Session, Sandbox], SessionContext],
        finish: Callable[[str, str], Awaitable[object]],
        exclusive: Exclusive,
    ) -> None:
        self._sessions = sessions
        self._reads = reads  # autocommit: a read alone costs no BEGIN/ROLLBACK round trips
        self._environments = environments
        self._pools = pools
        self._sandboxes = sandboxes
        self._snapshots = snapshots
        self._assets = assets
        self._transfers = snapshots.transfers
        self._context = context
        self._finish = finish
        self._make_room = partial(make_room, reads, sandboxes, exclusive)

    def pick_image(self, env: Environment, image: str | None, feature: str | None) -> str:
        """The image asked for, else the first of ``env``'s images that ``feature`` applies to,
        else its first image."""
        if image is not None:
            if image not in env.images:
                raise InvalidInput(
                    f"image {image!r} is not one of environment {env.name!r}'s images", field="image"
                )
            return image
        if feature is not None:
            wanted = self._environments.features_of(env).get(feature)
            if wanted is None:
                raise InvalidInput(f"environment {env.name!r} has no feature {feature!r}", field="feature")
            for candidate in env.images:
                if wanted.applies_to(candidate):
                    return candidate
            raise InvalidInput(f"no image of {env.name!r} supports feature {feature!r}", field="feature")
        return env.images[0]

    async def launch(
        self,
        env: Environment,
        row: Session,
        snap: Snapshot | None,
        placed: list[tuple[Asset, str]] | None,
        files: Sequence[tuple[str, ManifestFile]],
    ) -> bool:
        """Give the new session ``row`` a sandbox and make it ready; returns whether the
        sandbox came warm from the pool. ``files``: each manifest file and its resolved path."""
        sid = row.id
        # Warm path: claim a ready sandbox straight into the session and record the session,
        # atomically and only below the session quota (one statement on PostgreSQL). The
        # quota's clear refusal, before any work, is on the counts read with the claim.
        box, (quota, live) = await self._pools.claim(env, row.image, row, f"session {sid} started")
        if box is None:
            refuse_sessions(quota, live)
        warm = box is not None
        try:
            if box is None:
                box, warm = await self._on_demand(env, row)
            async with self._reads() as session:
                # counted again with this one recorded: of concurrent starts, none passes it
                await check_sessions(session, env.tenant_id, starting=0)
            await self._prepare(env, row, box, snap, placed, files)
        except BaseException as exc:
            await self._abandon(sid, box, exc)
            raise
        return warm

    async def _on_demand(self, env: Environment, row: Session) -> tuple[Sandbox, bool]:
        """A sandbox created for the session; or, when the pool is full only because members
        are still on their way to ready (a refill, a reset), the first of them that is, claimed
        as the warm path does, rather than a 503 (at most ``_COMING_WAIT`` s, then the pool's
        own 503). A quota the tenant's own idle pool members hold makes room first, and so
        does, in a full pool with none coming, a sandbox frozen under a suspended session (see
        :mod:`sandlot.services.pool_room`). Returns it and whether it came from the pool."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _COMING_WAIT
        while True:
            try:
                return await self._enter(row, await self._pools.create_for(env, row.image, row.id)), False
            except QuotaExceeded as exc:  # then, as below, a refill may have taken the room
                if not await give_way(self._reads, self._sandboxes, exc, env.tenant_id):
                    raise
            except NoCapacity:
                coming = await self._pools.coming(env, row.image)
                if not coming and await self._make_room(env, row.image):
                    continue
                if loop.time() > deadline or not coming:
                    raise
                await asyncio.sleep(0.1)
            box, _ = await self._pools.claim(env, row.image, row, f"session {row.id} started")
            if box is not None:
                return box, True

    async def _enter(self, row: Session, box: Sandbox) -> Sandbox:
        """Record the session on its on-demand sandbox and move that sandbox into the session
        (the warm path did both when it claimed one)."""
        row.sandbox_id = box.id
        async with self._sessions.begin() as session:
            await SessionRepository(session, None).add(row)
        return await self._sandboxes.move(box.id, S.IN_SESSION, f"session {row.id} started")

    async def _prepare(
        self,
        env: Environment,
        row: Session,
        box: Sandbox,
        snap: Snapshot | None,
        placed: list[tuple[Asset, str]] | None,
        files: Sequence[tuple[str, ManifestFile]],
    ) -> None:
        """Restore the snapshot, place the assets, run the features' ``setup_session`` hooks
        and write the manifest, in that order: hooks see the workspace the session starts with,
        and the manifest has the last word on the files it names."""
        ctx = self._context(row, box)
        if snap is not None:
            await self._snapshots.restore(snap, box, row.id)
        if placed:
            await self._place_assets(row, box, placed)
        for feat in self._environments.sandbox_features(env, row.image):
            await feat.setup_session(ctx)
        for path, item in files:
            await self._transfers.write_file(box, path, one_chunk(item.content), len(item.content))

    async def _place_assets(self, row: Session, box: Sandbox, placed: list[tuple[Asset, str]]) -> None:
        """Put the assets into the workspace and keep where each went in the session's state,
        so activity arguments can refer to them by name."""
        where = await self._assets.place(box, placed)
        paths = {name: f"{box.workspace.rstrip('/')}/{rel}" for name, rel in where.items()}
        row.state = {**row.state, "assets": paths}
        async with self._sessions.begin() as session:
            stored = await SessionRepository(session, None).get(row.id, lock=True)
            stored.state = {**stored.state, "assets": paths}

    async def _abandon(self, sid: str, box: Sandbox | None, exc: BaseException) -> None:
        """Undo a launch that failed: shut its sandbox (if it got one) down and end the session
        (unless it was never recorded)."""
        log.warning("session %s failed to start: %s", sid, exc)
        if box is not None:
            await self._sandboxes.shutdown(box.id, f"session start failed: {exc}"[:500])
        with contextlib.suppress(NotFound):
            await self._finish(sid, f"start failed: {exc}"[:500])


def one_tenant(env: Environment, snap: Snapshot | None, placed: Sequence[tuple[Asset, str]] | None) -> None:
    """What a session start names is one tenant's: an operator sees every tenant's objects, and
    a snapshot or an asset of another tenant than the environment's would put its files in a
    session of the environment's tenant."""
    if snap is not None and snap.tenant_id != env.tenant_id:
        raise InvalidInput(
            f"snapshot {snap.id} and environment {env.name!r} belong to different tenants",
            field="snapshot_id",
        )
    for asset, _ in placed or ():
        if asset.tenant_id != env.tenant_id:
            raise InvalidInput(
                f"asset {asset.name!r} and environment {env.name!r} belong to different tenants",
                field="assets",
            )
