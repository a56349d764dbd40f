"""Per-image warm pools.

Acquiring takes a ready sandbox with a row lock that skips rows other processes hold plus a
compare-and-set on its status, so two API processes never hand out the same sandbox. With no
ready sandbox, one is created on demand if the image's pool has room (``max``), else the caller
gets ``NoCapacity`` (503 + Retry-After). Housekeeping, run by one process at a time, replaces dead
sandboxes, tops each pool up to ``min`` and trims it back to ``max``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import partial

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from sandlot.domain.errors import (
    Conflict,
    EnvironmentOutageError,
    RuntimeUnavailable,
    SandboxStateError,
)
from sandlot.domain.keys import Scope
from sandlot.domain.pools import NO_POOL, PoolBounds, bounds_for, refill_count
from sandlot.domain.status import SandboxStatus
from sandlot.features.base import SandboxContext
from sandlot.observability.metrics import PoolFigures
from sandlot.observability.tracing import ATTR, span, traced
from sandlot.runtime.base import Limits
from sandlot.runtime.shells import ShellManager
from sandlot.services.accounts import Principal
from sandlot.services.environments import EnvironmentService
from sandlot.services.pool_room import Pick, idle_too_long, oldest, ready_members
from sandlot.services.sandboxes import NewSandbox, SandboxService
from sandlot.store.engine import make_sessionmaker, single_statement_sessions
from sandlot.store.leader import leader
from sandlot.store.repositories import EnvironmentRepository, PoolRepository, SandboxRepository
from sandlot.store.tables import Environment, Sandbox, Session
from sandlot.store.types import utcnow

__all__ = ["PoolService"]

log = logging.getLogger(__name__)

S = SandboxStatus
_STARTING = (S.CREATED.value, S.SETTING_UP.value)
_WAITABLE = (*_STARTING, S.EXITING_SESSION.value, S.READY.value)
LABEL_ENVIRONMENT = "dev.sandlot.environment"


class PoolService:
    def __init__(
        self,
        engine: AsyncEngine,
        sessions: async_sessionmaker[AsyncSession],
        sandboxes: SandboxService,
        environments: EnvironmentService,
        shells: ShellManager | None = None,
        *,
        leaders: AsyncEngine | None = None,
    ) -> None:
        self._engine = engine
        # the round's lock is held on a connection of its own: taken from the requests' pool,
        # three rounds holding it and each waiting for another connection starved a pool of 3
        self._leaders = leaders or engine
        self._shells = shells if sandboxes.settings.pool_warm_shells else None
        self._sessions = sessions
        self._reads = make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))
        self._sandboxes = sandboxes
        self._environments = environments
        self._last_housekeeping: dict[str, float] = {}
        # environment id -> sandbox id -> when its features were last checked (or first seen)
        self._checked: dict[str, dict[str, float]] = {}
        self._check_every = sandboxes.settings.pool_check_interval
        self._claims = asyncio.Semaphore(sandboxes.settings.pool_claims_at_once)  # FIFO turns

    @staticmethod
    def bounds(env: Environment, image: str) -> PoolBounds:
        return bounds_for(env.pool_size, image)

    async def _provision(
        self, env: Environment, image: str, reason: str, for_session: str | None = None
    ) -> Sandbox:
        """Start one sandbox for ``env``; track the environment's health for outages."""
        ask = NewSandbox(image=image, env=env.env, network=env.network)
        disk = env.disk_mb or self._sandboxes.settings.default_disk_mb
        limits = Limits(memory_mb=env.memory_mb, cpus=env.cpus, pids=env.pids, disk_mb=disk)
        bounds = self.bounds(env, image)
        try:
            row = await self._sandboxes.provision(
                env.tenant_id,
                image,
                limits,
                None,
                ask,
                environment_id=env.id,
                extra_labels={LABEL_ENVIRONMENT: env.id},
                pool_max=(env.id, bounds.max) if bounds.pooled else None,
                for_session=for_session,
                setup=self._setup_hook(env, image),
            )
        except (SandboxStateError, RuntimeUnavailable) as exc:
            await self._mark_unhealthy(env, exc)
            raise
        if env.unhealthy_since is not None:
            await self._set_unhealthy_since(env.id, None)
            env.unhealthy_since = None
        log.info("started %s sandbox %s for %s (%s)", image, row.id, env.name, reason)
        if for_session is None:
            self._warm_shell(row)
        return row

    def _warm_shell(self, row: Sandbox) -> None:
        """Open the shell of a sandbox that now waits in the pool (see ShellManager.warm)."""
        if self._shells is not None and row.runtime_ref is not None and row.status == S.READY.value:
            self._shells.warm_soon(row.id, row.runtime_ref)

    def _context(self, row: Sandbox, ref: str | None = None) -> SandboxContext:
        return SandboxContext(
            sandbox_id=row.id,
            ref=ref or row.runtime_ref or "",
            image=row.image,
            workspace=row.workspace,
            runtime=self._sandboxes.runtime,
            settings=self._sandboxes.settings,
            shells=self._shells,
        )

    def _setup_hook(self, env: Environment, image: str) -> Callable[[Sandbox, str], Awaitable[None]] | None:
        """The features' ``setup`` hooks for a new sandbox of ``image``, or None if none apply."""
        features = self._environments.sandbox_features(env, image)
        if not features:
            return None

        async def setup(row: Sandbox, ref: str) -> None:
            ctx = self._context(row, ref)
            for feature in features:
                await feature.setup(ctx)

        return setup

    async def _retire(self, env: Environment | None, row: Sandbox, reason: str) -> None:
        """Shut an idle sandbox down, running its features' ``teardown`` hooks first: only
        while it is still ready (a session may have claimed it since it was listed)."""

        async def teardown(row: Sandbox) -> None:
            if env is None or row.runtime_ref is None:
                return
            ctx = self._context(row)
            for feature in self._environments.sandbox_features(env, row.image):
                try:
                    await feature.teardown(ctx)
                except Exception as exc:
                    log.warning("teardown of %s by feature %s failed: %s", row.id, feature.name, exc)

        await self._sandboxes.shutdown(row.id, reason, only_if=S.READY, first=teardown)

    async def _check_features(self, env: Environment, row: Sandbox) -> None:
        """Run the features' ``housekeep`` hooks on an idle sandbox; one that fails is shut
        down (the refill that follows replaces it)."""
        ctx = self._context(row)
        for feature in self._environments.sandbox_features(env, row.image):
            try:
                with span(
                    "feature.housekeep",
                    links=self._sandboxes.spans.links([row.id]),
                    sandbox=row.id,
                    image=row.image,
                    feature=feature.name,
                ):
                    await feature.housekeep(ctx)
            except Exception as exc:
                log.warning("feature %s housekeeping failed on %s: %s", feature.name, row.id, exc)
                await self._sandboxes.shutdown(
                    row.id, f"feature {feature.name} housekeeping failed: {exc}"[:500], only_if=S.READY
                )
                return

    async def _set_unhealthy_since(self, env_id: str, value: object) -> None:
        async with self._sessions.begin() as session:
            row = await EnvironmentRepository(session, None).get(env_id)
            row.unhealthy_since = value  # type: ignore[assignment]

    async def _mark_unhealthy(self, env: Environment, exc: Exception) -> None:
        now = utcnow()
        if env.unhealthy_since is None:
            env.unhealthy_since = now
            await self._set_unhealthy_since(env.id, now)
            return
        if now - env.unhealthy_since > timedelta(seconds=env.outage_grace_period_seconds):
            raise EnvironmentOutageError(
                f"environment {env.name!r} has had no healthy sandbox since "
                f"{env.unhealthy_since.isoformat()}: {exc}",
                environment=env.name,
            ) from exc

    async def claim(
        self, env: Environment, image: str, into: Session, reason: str
    ) -> tuple[Sandbox | None, tuple[int, int]]:
        """Take a warm sandbox straight into the session ``into`` and record that session, if
        the tenant's live sessions are below its quota. Returns the sandbox, or None when the
        pool has none ready or the quota is reached (then no session row was written), and
        (the session quota, the live sessions) as counted just before (see
        ``PoolRepository.claim_within_quota``)."""
        with span("pool.claim", environment=env.name, image=image, session=into.id) as sp:
            async with (
                self._claims,
                single_statement_sessions(self._engine, self._sessions, self._reads) as session,
            ):
                row, counted = await PoolRepository(session).claim_within_quota(env.id, image, into, reason)
            if row is not None:
                sp.set_attribute(ATTR["sandbox"], row.id)
                sp.add_event("sandbox.status", {ATTR["sandbox"]: row.id, ATTR["to_status"]: "acquired"})
                sp.add_event("sandbox.status", {ATTR["sandbox"]: row.id, ATTR["to_status"]: "in_session"})
            return row, counted

    async def coming(self, env: Environment, image: str) -> bool:
        """Whether members of ``image`` are on their way to ready in ``env``'s pool (being
        created, or reset after a session), or ready already: one that became ready since a
        claim missed it is the next claim's to take."""
        async with self._reads() as session:
            counts = await PoolRepository(session).counts(env.id)
        return any(n for (img, status), n in counts.items() if img == image and status in _WAITABLE)

    async def create_for(self, env: Environment, image: str, session_id: str) -> Sandbox:
        """Create a sandbox on demand for a session (status ``acquired``), within ``max``."""
        bounds = self.bounds(env, image)
        row = await self._provision(env, image, "on demand", for_session=session_id)
        if not bounds.pooled:
            log.debug("environment %s has no pool for %s: created on demand", env.name, image)
        return row

    @traced("pool.release", sandbox="row.id", image="row.image", reason="reason")
    async def release(self, row: Sandbox, env: Environment | None, reason: str) -> None:
        """After a session (``row`` as it was read when it left ``in_session``): reset the
        sandbox and return it to the pool, or shut it down. A sandbox where a command ran as
        another user (not ``reusable``: marked only while ``in_session``, under the row lock,
        so the row read on leaving that status has the last word) is shut down: its reset could
        not prove a clean slate."""
        bounds = self.bounds(env, row.image) if env is not None else NO_POOL
        if not row.reusable:
            await self._sandboxes.shutdown(row.id, f"{reason} (a command ran as another user)")
            return
        if bounds.pooled and row.runtime_ref is not None:
            try:
                await self._reset(row, reason)
                return
            except SandboxStateError as exc:
                log.warning("sandbox %s failed its reset (%s); replacing it", row.id, exc)
                await self._sandboxes.shutdown(row.id, f"reset failed: {exc}"[:500])
                return
        await self._sandboxes.shutdown(row.id, f"{reason} (not pooled)")

    async def _reset(self, row: Sandbox, reason: str) -> None:
        """Reset a sandbox back into the pool; with warm shells, the reset's own process
        becomes the shell its next session adopts (registered before the sandbox is ready)."""
        assert row.runtime_ref is not None
        warm = self._shells is not None
        stream = await self._sandboxes.runtime.reset(row.runtime_ref, row.workspace, then_shell=warm)
        if stream is not None and self._shells is not None:
            self._shells.warm_soon(row.id, row.runtime_ref, stream)
        try:
            await self._sandboxes.move(row.id, S.READY, f"reset after {reason}", session_id=None)
        except BaseException:
            if self._shells is not None:
                await self._shells.drop_warm(row.id)
            raise

    async def figures(self) -> tuple[dict[str, int], list[PoolFigures]]:
        """Sandboxes by status and, per environment and image, ready count and bounds."""
        async with self._reads() as session:
            repo = PoolRepository(session)
            by_status = await repo.by_status()
            ready = await repo.ready_by_environment()
        pools = []
        for env in await self._environments.all():
            for image in env.images:
                bounds = self.bounds(env, image)
                pools.append(PoolFigures(image, ready.get((env.id, image), 0), bounds.min, bounds.max))
        return by_status, pools

    # -- housekeeping -------------------------------------------------------------------------

    async def housekeep_all(self, *, force: bool = False) -> None:
        """One round over every environment (only in the process that holds the lock)."""
        async with leader(self._leaders, "pools") as lead:
            if not lead:
                return
            envs = await self._environments.all()
            now = time.monotonic()
            due = [
                env
                for env in envs
                if force
                or now - self._last_housekeeping.get(env.id, 0.0) >= env.housekeeping_interval_seconds
            ]
            if due:  # a trace per round that does something, not per tick
                with span("pool.housekeep", root=True):
                    await self._housekeep_round(due, now)
            await self._drain_orphans({e.id for e in envs})
            for env_id in self._checked.keys() - {e.id for e in envs}:
                del self._checked[env_id]

    async def _housekeep_round(self, due: list[Environment], now: float) -> None:
        # one listing per round instead of one inspect per sandbox
        running = {o.ref for o in await self._sandboxes.runtime.list_owned() if o.running}
        for env in due:
            self._last_housekeeping[env.id] = now
            try:
                with span("pool.housekeep_environment", tenant=env.tenant_id, environment=env.name):
                    await self.housekeep(env, running)
            except Exception:
                log.exception("housekeeping of environment %s failed", env.name)

    async def _drain_orphans(self, env_ids: set[str]) -> None:
        """Shut down idle pool sandboxes whose environment was deleted."""
        async with self._reads() as session:
            rows = await SandboxRepository(session, None).list(statuses=[S.READY.value], limit=1_000_000)
        for row in rows:
            if row.environment_id is not None and row.environment_id not in env_ids:
                await self._sandboxes.shutdown(row.id, "environment deleted")

    async def housekeep(self, env: Environment, running: set[str]) -> None:
        """Replace dead sandboxes (``running``: refs of running containers), check the features
        of idle ones that were not checked for ``pool_check_interval`` (a sandbox just made
        ready passed its readiness probe or its reset), then top each image up to min and trim
        it to max."""
        async with self._sessions() as session:
            live = await PoolRepository(session).live(env.id)
        now = time.monotonic()
        checked = self._checked.setdefault(env.id, {})
        for row in live:
            if row.status not in (S.READY.value, S.IN_SESSION.value, S.ACQUIRED.value):
                continue
            if row.runtime_ref not in running:
                # the listing is from the start of the round: a sandbox started since is not
                # in it, so ask about this one before calling it dead
                if row.runtime_ref is None or not await self._sandboxes.runtime.is_running(row.runtime_ref):
                    await self._sandboxes.shutdown(row.id, "container died (housekeeping)")
            elif row.status == S.READY.value:
                if now - checked.setdefault(row.id, now) >= self._check_every:
                    checked[row.id] = now
                    await self._check_features(env, row)
            else:
                checked.pop(row.id, None)  # in a session: its next wait in the pool starts afresh
        for sandbox_id in checked.keys() - {r.id for r in live}:
            del checked[sandbox_id]
        async with self._sessions() as session:
            counts = await PoolRepository(session).counts(env.id)
        for image in env.images:
            bounds = self.bounds(env, image)
            ready = counts.get((image, S.READY.value), 0)
            starting = sum(counts.get((image, s), 0) for s in _STARTING)
            total = sum(n for (img, _), n in counts.items() if img == image)
            missing = refill_count(bounds, ready, starting, total)
            if missing:
                results = await asyncio.gather(
                    *(self._provision(env, image, "pool refill") for _ in range(missing)),
                    return_exceptions=True,
                )
                for res in results:
                    if isinstance(res, BaseException):
                        log.warning("pool refill for %s/%s failed: %s", env.name, image, res)
            excess = min(ready, total - bounds.max) if bounds.pooled else ready
            if excess > 0:
                await self._trim(env, image, partial(oldest, excess), "pool shrunk")
            elif env.pool_idle_seconds and ready > bounds.min:  # what a busy moment took it to
                pick = partial(idle_too_long, env.pool_idle_seconds, bounds.min, utcnow())
                await self._trim(env, image, pick, f"idle {env.pool_idle_seconds} s beyond the pool's min")

    async def _trim(self, env: Environment, image: str, pick: Pick, reason: str) -> None:
        """Retire what ``pick`` picks of the pool's ready members (the longest idle first)."""
        async with self._sessions() as session:
            live = await PoolRepository(session).live(env.id)
        for row in pick(ready_members(live, image)):
            await self._retire(env, row, reason)

    async def drain_member(self, principal: Principal, sandbox_id: str) -> None:
        """Take one idle sandbox out of its pool (shut down; the pool refills to its minimum on
        its next round). Only a ready pool sandbox: one in a session is killed instead."""
        principal.require(Scope.SANDBOXES_WRITE)
        row = await self._sandboxes.get(principal, sandbox_id)  # another tenant's: not found
        if row.status != S.READY.value or row.environment_id is None:
            raise Conflict(
                f"sandbox {sandbox_id} is not an idle pool sandbox ({row.status})", status=row.status
            )
        await self._sandboxes.shutdown(row.id, "drained from the pool", only_if=S.READY)

    async def drain(self, env: Environment) -> None:
        """Shut down every idle sandbox of an environment (before deleting it)."""
        async with self._sessions() as session:
            live = await PoolRepository(session).live(env.id)
        for row in live:
            if row.status == S.READY.value:
                await self._retire(env, row, "environment deleted")
