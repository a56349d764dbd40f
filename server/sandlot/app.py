"""The Litestar application factory. No module-level app: call ``create_app(settings)``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from litestar import Litestar, Router
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.plugins.opentelemetry import OpenTelemetryConfig
from opentelemetry.sdk.trace import TracerProvider

from sandlot import __version__
from sandlot.api.assets import AssetController
from sandlot.api.audit import AuditController
from sandlot.api.bounds import Bounds
from sandlot.api.deps import provide_principal, provide_services
from sandlot.api.drain import DrainUnread
from sandlot.api.environments import EnvironmentController
from sandlot.api.errors import exception_handlers
from sandlot.api.health import HealthController
from sandlot.api.middleware import Accountable, RefuseNul, RequestTracing
from sandlot.api.processes import ProcessController
from sandlot.api.pty import PtyController
from sandlot.api.sandboxes import SandboxController, SandboxFilesController, SandboxStreamController
from sandlot.api.sessions import SessionController, SessionStreamController, SessionWorkspaceController
from sandlot.api.snapshots import SnapshotController
from sandlot.api.tenants import KeyController, TenantController
from sandlot.console import console_parts, secure_console_answers
from sandlot.observability.tracing import build_provider, request_span_start, tracer_for
from sandlot.runtime.base import SandboxRuntime
from sandlot.settings import Settings
from sandlot.wiring import assemble

__all__ = ["create_app"]


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
        async with assemble(settings, runtime, provider) as services:
            app.state.services = services
            yield

    console = console_parts(settings)
    return Litestar(
        route_handlers=[*_routers(settings), console.router],
        template_config=console.templates,
        csrf_config=console.csrf,
        middleware=_middleware(settings, provider),
        before_send=[secure_console_answers],
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
        request_max_body_size=_largest_body(settings),
        debug=False,
    )


#: The JSON API authenticates every request by its key, never by a cookie: no CSRF token there
#: (the console's routes carry one).
_NO_CSRF = {"exclude_from_csrf": True}


def _routers(settings: Settings) -> list[Router]:
    """Three routers, one per body limit: file uploads and streamed calls, workspace archives,
    everything else."""
    files = Router(
        path="/",
        route_handlers=[
            SandboxFilesController,
            SandboxStreamController,
            SessionStreamController,
            AssetController,
        ],
        request_max_body_size=settings.max_file_bytes,
        opt=_NO_CSRF,
    )
    workspaces = Router(
        path="/",
        route_handlers=[SessionWorkspaceController],
        request_max_body_size=settings.max_snapshot_bytes,
        opt=_NO_CSRF,
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
            TenantController,
            KeyController,
            AuditController,
        ],
        request_max_body_size=settings.max_request_bytes,
        opt=_NO_CSRF,
    )
    return [api, files, workspaces]


def _largest_body(settings: Settings) -> int:
    return max(settings.max_file_bytes, settings.max_request_bytes, settings.max_snapshot_bytes)


def _middleware(settings: Settings, provider: TracerProvider | None) -> list[Any]:
    bounds = DefineMiddleware(
        Bounds,
        client_max_open=settings.client_max_open,
        key_max_websockets=settings.key_max_websockets,
        body_read_timeout=settings.body_read_timeout,
        body_min_rate=settings.body_min_rate,
    )
    # what a client may hold open and how slowly it may send (api/bounds.py); then a body left
    # unread is read to its end first, so the client sees the answer (api/drain.py)
    drain = DefineMiddleware(DrainUnread, limit=_largest_body(settings))
    middleware: list[Any] = [bounds, drain, RefuseNul, Accountable]
    if provider is not None:
        # request spans, continuing a client's traceparent; probes and scrapes are not traced
        middleware.append(
            OpenTelemetryConfig(
                tracer_provider=provider,
                exclude=["/healthz", "/readyz", "/metrics"],
                scope_span_details_extractor=request_span_start,
            ).middleware
        )
        # this app's tracer for its requests; without it they use the non-recording one (a
        # request task starts from the server's context, where nothing is bound), so an
        # untraced app pays for no middleware on the hot path
        middleware.append(DefineMiddleware(RequestTracing, tracer=tracer_for(provider)))
    return middleware
