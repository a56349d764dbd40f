"""The Litestar application factory. No module-level app: call ``create_app(settings)``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.plugins.opentelemetry import OpenTelemetryConfig
from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor
from opentelemetry.sdk.trace import TracerProvider

from sandlot import __version__
from sandlot.api.assets import AssetController
from sandlot.api.deps import Services, provide_principal, provide_services
from sandlot.api.environments import EnvironmentController
from sandlot.api.errors import exception_handlers
from sandlot.api.health import HealthController
from sandlot.api.middleware import NameSpanByRoute, RefuseNul
from sandlot.api.processes import ProcessController
from sandlot.api.pty import PtyController
from sandlot.api.sandboxes import SandboxController, SandboxFilesController
from sandlot.api.sessions import SessionController, SessionWorkspaceController, SnapshotController
from sandlot.features.registry import FeatureRegistry
from sandlot.observability.tracing import TracedRuntime, Tracing, build_provider, request_span_start
from sandlot.runtime.base import SandboxRuntime
from sandlot.runtime.select import make_runtime
from sandlot.runtime.shell import ShellManager
from sandlot.services.accounts import AccountService
from sandlot.services.activities import ActivityRecorder
from sandlot.services.assets import AssetService
from sandlot.services.environments import EnvironmentService
from sandlot.services.loops import PeriodicLoop
from sandlot.services.pools import PoolService
from sandlot.services.processes import ProcessService
from sandlot.services.reconcile import Reconciler
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService
from sandlot.services.snapshots import SnapshotService
from sandlot.services.transfers import Transfers
from sandlot.settings import Settings
from sandlot.store import migrate
from sandlot.store.blobs import FileBlobStore
from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.leader import leader

__all__ = ["create_app"]

log = logging.getLogger(__name__)


def create_app(
    settings: Settings,
    *,
    runtime: SandboxRuntime | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Litestar:
    """Build the app. ``runtime`` overrides the one chosen from settings (tests use it);
    ``tracer_provider`` overrides the one built from the ``otel_*`` settings."""
    provider = tracer_provider or build_provider(settings)

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        if settings.migrate_on_start:
            await asyncio.to_thread(migrate.upgrade, settings.database_url)
        engine = make_engine(settings.database_url)
        Tracing.install(provider)
        if provider is not None:
            # its version check stops at SQLAlchemy 2.0; the engine events it uses are unchanged
            # in 2.1 (tests/integration/test_observability.py checks the spans arrive)
            SQLAlchemyInstrumentor().instrument(
                engine=engine.sync_engine, tracer_provider=provider, skip_dep_check=True
            )
        sessions = make_sessionmaker(engine)
        # Reads on the request path skip BEGIN/ROLLBACK round trips.
        reads = make_sessionmaker(engine.execution_options(isolation_level="AUTOCOMMIT"))
        chosen = runtime or await make_runtime(settings)
        rt: SandboxRuntime = cast(SandboxRuntime, TracedRuntime(chosen)) if provider else chosen
        registry = FeatureRegistry.discover()
        shells = ShellManager(rt)
        recorder = ActivityRecorder(sessions)
        transfers = Transfers(rt, settings)
        await transfers.clean_spool()
        sandboxes = SandboxService(sessions, rt, settings, transfers)
        environments = EnvironmentService(sessions, registry, reads)
        pools = PoolService(engine, sessions, sandboxes, environments)
        blobs = FileBlobStore(settings.data_dir / "blobs")
        await blobs.clean_partial()
        snapshots = SnapshotService(sessions, blobs, rt, settings, transfers)
        session_service = SessionService(
            sessions,
            reads,
            environments,
            pools,
            sandboxes,
            registry,
            shells,
            recorder,
            settings,
            snapshots,
            AssetService(sessions, blobs, transfers),
        )
        services = Services(
            settings=settings,
            accounts=AccountService(sessions, reads, cache_seconds=settings.auth_cache_seconds),
            sandboxes=sandboxes,
            environments=environments,
            pools=pools,
            sessions=session_service,
            processes=ProcessService(sessions, session_service, rt, settings),
        )
        app.state.services = services
        reconciler = Reconciler(
            sessions, rt, settings.instance, shutdown=sandboxes.shutdown, lost=session_service.sandboxes_lost
        )
        if settings.reconcile_on_start:
            await reconciler.run()

        async def reap() -> None:
            await sandboxes.reap_expired()
            await services.sessions.expire()

        async def reconcile() -> None:
            async with leader(engine, "reconcile") as lead:
                if lead:
                    await reconciler.run()

        loops = [
            PeriodicLoop("reaper", reap, settings.reaper_interval, enabled=settings.reaper_enabled),
            PeriodicLoop(
                "reconcile", reconcile, settings.reconcile_interval, enabled=settings.reconcile_enabled
            ),
            PeriodicLoop("pools", pools.housekeep_all, settings.pool_interval, enabled=settings.pool_enabled),
            PeriodicLoop("activities", recorder.flush, settings.activity_flush_interval, enabled=True),
        ]
        for loop in loops:
            loop.start()
        try:
            yield
        finally:
            for loop in loops:
                await loop.stop()
            await recorder.flush()
            await shells.close_all()
            if runtime is None:
                await rt.close()
            await engine.dispose()
            if provider is not None:
                SQLAlchemyInstrumentor().uninstrument()
                provider.force_flush()
                if Tracing.provider is provider:
                    Tracing.install(None)

    files = Router(
        path="/",
        route_handlers=[SandboxFilesController, AssetController],
        request_max_body_size=settings.max_file_bytes,
    )
    workspaces = Router(
        path="/",
        route_handlers=[SessionWorkspaceController],
        request_max_body_size=settings.max_snapshot_bytes,
    )
    api = Router(
        path="/",
        route_handlers=[
            SandboxController,
            EnvironmentController,
            SessionController,
            SnapshotController,
            ProcessController,
            PtyController,
            HealthController,
        ],
        request_max_body_size=settings.max_request_bytes,
    )
    middleware: list[Any] = [RefuseNul]
    if provider is not None:
        # request spans, continuing a client's traceparent; probes and scrapes are not traced
        middleware.append(
            OpenTelemetryConfig(
                tracer_provider=provider,
                exclude=["/healthz", "/readyz", "/metrics"],
                scope_span_details_extractor=request_span_start,
            ).middleware
        )
        middleware.append(NameSpanByRoute)
    return Litestar(
        route_handlers=[api, files, workspaces],
        middleware=middleware,
        lifespan=[lifespan],
        dependencies={
            "services": Provide(provide_services, sync_to_thread=False),
            "principal": Provide(provide_principal),
        },
        exception_handlers=exception_handlers,
        openapi_config=OpenAPIConfig(
            title="Sandlot",
            version=__version__,
            description="Isolated sandboxes for AI agents.",
            path="/openapi",
            render_plugins=[SwaggerRenderPlugin()],
        ),
        request_max_body_size=max(
            settings.max_file_bytes, settings.max_request_bytes, settings.max_snapshot_bytes
        ),
        debug=False,
    )
