"""Wiring: build every service from settings, run the background loops, and take it all down.

:func:`assemble` is the app lifespan's body. Each resource is entered on one exit stack as
it is made, so a failure half-way through start-up still closes what was already open, in
reverse order.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import cast

from opentelemetry.instrumentation.sqlalchemy.engine import EngineTracer
from opentelemetry.metrics import NoOpMeter
from opentelemetry.sdk.trace import TracerProvider
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from sandlot.api.deps import Services
from sandlot.features.registry import FeatureRegistry
from sandlot.observability.metrics import Metrics
from sandlot.observability.tracing import TracedRuntime, bind_tracer, tracer_for, unbind_tracer
from sandlot.runtime.base import SandboxRuntime
from sandlot.runtime.select import make_runtime
from sandlot.runtime.shells import ShellManager
from sandlot.services.accounts import AccountService
from sandlot.services.activities import ActivityRecorder
from sandlot.services.assets import AssetService
from sandlot.services.audit import AuditService
from sandlot.services.charts import ChartService
from sandlot.services.environments import EnvironmentService
from sandlot.services.health import HealthService
from sandlot.services.loops import PeriodicLoop
from sandlot.services.overview import OverviewService
from sandlot.services.pools import PoolService
from sandlot.services.process_start import StartGate
from sandlot.services.processes import ProcessService
from sandlot.services.rate_limits import RateLimiter
from sandlot.services.reconcile import Reconciler
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService
from sandlot.services.sign_ins import SignIns
from sandlot.services.snapshot_gc import SnapshotCollector
from sandlot.services.snapshots import SnapshotService
from sandlot.services.tenants import TenantService
from sandlot.services.terminals import TerminalService
from sandlot.services.transfers import Transfers
from sandlot.settings import Settings
from sandlot.store import migrate
from sandlot.store.blobs import FileBlobStore
from sandlot.store.engine import fill_pool, make_engine, make_sessionmaker
from sandlot.store.leader import Exclusive, leader

__all__ = ["assemble"]


@asynccontextmanager
async def assemble(
    settings: Settings, runtime: SandboxRuntime | None, provider: TracerProvider | None
) -> AsyncIterator[Services]:
    """The services, with the background loops running, until the context ends. ``runtime``
    (tests) is used as given and left open; otherwise one is chosen from settings."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    if settings.migrate_on_start:
        await asyncio.to_thread(migrate.upgrade, settings.database_url)
    async with AsyncExitStack() as stack:
        engine = make_engine(
            settings.database_url,
            pool_size=settings.database_pool_size,
            max_overflow=settings.database_max_overflow,
        )
        stack.push_async_callback(engine.dispose)
        counters = make_engine(settings.database_url, durable=False)  # the rate limit's buckets
        stack.push_async_callback(counters.dispose)
        locks = engine  # SQLite: the session locks are in-process only (see Exclusive)
        if engine.dialect.name == "postgresql":
            # their own connections: held while a suspend runs or a background round leads,
            # never the requests' own; checked before use (the first checkpoint after a
            # database restart would fail on one)
            locks = make_engine(settings.database_url, pool_size=1, max_overflow=9, pre_ping=True)
            stack.push_async_callback(locks.dispose)
        await fill_pool(engine, settings.database_pool_size)
        _trace(stack, provider, engine)
        rt = await _runtime(stack, settings, runtime, provider)
        sessions = make_sessionmaker(engine)
        services, recorder, shells = await _services(settings, engine, sessions, rt, counters, locks)
        if settings.shell_channels:
            rt.use_channels(shells.channel)
        stack.push_async_callback(shells.close_all)
        stack.push_async_callback(services.processes.taps.close_all)
        stack.push_async_callback(recorder.flush)
        stack.push_async_callback(services.audit.flush)
        reconciler = Reconciler(
            sessions,
            rt,
            settings.instance,
            shutdown=services.sandboxes.shutdown,
            lost=services.sessions.sandboxes_lost,
        )
        if settings.reconcile_on_start:
            await reconciler.run()
        for loop in _loops(settings, locks, services, recorder, reconciler):
            loop.start()
            stack.push_async_callback(loop.stop)
        yield services


def _trace(stack: AsyncExitStack, provider: TracerProvider | None, engine: AsyncEngine) -> None:
    """Spans from this app's background work go to ``provider`` (none when tracing is off),
    until the stack closes; requests bind the same tracer in their middleware
    (``api/middleware.py``). Database calls are traced on this app's engine only: the
    instrumentor's ``instrument()`` patches SQLAlchemy process-wide (a second app's calls went to
    the first app's provider), so its per-engine tracer is attached directly."""
    stack.callback(unbind_tracer, bind_tracer(tracer_for(provider)))
    if provider is None:
        return
    usage = NoOpMeter("sandlot").create_up_down_counter("db.client.connections.usage")
    EngineTracer(provider.get_tracer("opentelemetry.instrumentation.sqlalchemy"), engine.sync_engine, usage)
    stack.callback(provider.force_flush)


async def _runtime(
    stack: AsyncExitStack,
    settings: Settings,
    given: SandboxRuntime | None,
    provider: TracerProvider | None,
) -> SandboxRuntime:
    chosen = given or await make_runtime(settings)
    rt = cast(SandboxRuntime, TracedRuntime(chosen)) if provider else chosen
    if given is None:
        stack.push_async_callback(rt.close)
    return rt


async def _blob_store(settings: Settings) -> FileBlobStore:
    """Blobs under the data directory, without the partial ones a crash left."""
    blobs = FileBlobStore(settings.data_dir / "blobs")
    await blobs.clean_partial()
    return blobs


async def _services(
    settings: Settings,
    engine: AsyncEngine,
    sessions: async_sessionmaker[AsyncSession],
    rt: SandboxRuntime,
    counters: AsyncEngine,
    locks: AsyncEngine,
) -> tuple[Services, ActivityRecorder, ShellManager]:
    # Reads on the request path skip BEGIN/ROLLBACK round trips.
    reads = make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))
    registry = FeatureRegistry.discover()
    metrics = Metrics()
    shells = ShellManager(rt, metrics)
    recorder = ActivityRecorder(sessions)
    transfers = Transfers(rt, settings)
    await transfers.clean_spool()
    sandboxes = SandboxService(sessions, rt, settings, transfers, metrics)
    environments = EnvironmentService(sessions, registry, reads, allowed_users=settings.exec_users_allowed)
    pools = PoolService(engine, sessions, sandboxes, environments, shells, leaders=locks)
    blobs = await _blob_store(settings)
    snapshots = SnapshotService(sessions, blobs, rt, settings, transfers)
    assets = AssetService(sessions, blobs, transfers)
    exclusive = Exclusive(locks)  # one per process: its waiters queue in it
    session_service = SessionService(
        sessions, reads, environments, pools, sandboxes, registry, shells, recorder, settings,
        snapshots, assets, exclusive,
    )  # fmt: skip
    accounts = AccountService(sessions, reads, cache_seconds=settings.auth_cache_seconds)
    audit = AuditService(sessions, reads)
    gate = StartGate(session_service, exclusive)  # processes' and terminals' starts
    health = HealthService(reads, rt, pools, metrics)
    tenant_rates = (settings.tenant_rate_limit_per_second, settings.tenant_rate_limit_burst)
    services = Services(
        settings=settings,
        accounts=accounts,
        sandboxes=sandboxes,
        environments=environments,
        pools=pools,
        sessions=session_service,
        processes=ProcessService(sessions, session_service, rt, settings, gate),
        snapshots=snapshots,
        collector=SnapshotCollector(sessions, blobs, grace_seconds=settings.snapshot_gc_grace_seconds),
        assets=assets,
        terminals=TerminalService(accounts, sandboxes, session_service, gate),
        health=health,
        tenants=TenantService(accounts, reads),
        overview=OverviewService(reads, environments, pools, health),
        charts=ChartService(reads),
        limits=RateLimiter(counters, settings.rate_limit_per_second, settings.rate_limit_burst),
        tenant_limits=RateLimiter(counters, *tenant_rates, per_tenant=True),
        audit=audit,
        sign_ins=SignIns(
            accounts,
            audit,
            attempts=settings.console_sign_in_attempts,
            window=settings.console_sign_in_window,
        ),
    )
    return services, recorder, shells


def _loops(
    settings: Settings,
    locks: AsyncEngine,
    services: Services,
    recorder: ActivityRecorder,
    reconciler: Reconciler,
) -> list[PeriodicLoop]:
    async def reap() -> None:
        await services.sandboxes.reap_expired()
        await services.sessions.expire()

    async def reconcile() -> None:
        async with leader(locks, "reconcile") as lead:
            if lead:
                await reconciler.run()

    async def collect() -> None:
        async with leader(locks, "snapshot-gc") as lead:
            if lead:
                await services.collector.collect()

    s = settings
    work: list[tuple[str, Callable[[], Awaitable[object]], float, bool]] = [
        ("reaper", reap, s.reaper_interval, s.reaper_enabled),
        ("reconcile", reconcile, s.reconcile_interval, s.reconcile_enabled),
        ("pools", services.pools.housekeep_all, s.pool_interval, s.pool_enabled),
        ("snapshot-gc", collect, s.snapshot_gc_interval, s.snapshot_gc_enabled),
        ("activities", recorder.flush, s.activity_flush_interval, True),
        ("audit", services.audit.flush, s.activity_flush_interval, True),
    ]
    return [PeriodicLoop(name, fn, interval, enabled=on) for name, fn, interval, on in work]
