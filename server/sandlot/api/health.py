"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from litestar.openapi.datastructures import ResponseSpec

from sandlot.api.deps import PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.domain.errors import NotFound
from sandlot.domain.keys import Scope

__all__ = ["HealthController"]

_PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


class HealthController(Controller):
    tags = ["health"]

    @get("/healthz", summary="The process answers")
    async def healthz(self, services: ServicesDep) -> dict[str, str]:
        return {"status": "ok", "boot_id": services.settings.boot_id}

    @get(
        "/metrics",
        summary="Prometheus metrics (an operator key or one with metrics:read; no tenant data in them)",
        media_type=_PROMETHEUS,
        responses=problems(404),
    )
    async def metrics(self, services: ServicesDep, principal: PrincipalDep) -> Response[bytes]:
        """For an operator key or a scraper's (``metrics:read``, which an operator grants): the
        figures are the whole service's (sandboxes, pools, errors), which a tenant, or anyone
        who reaches the port, has no business reading."""
        principal.require(Scope.METRICS_READ)
        if not services.settings.metrics_enabled:
            raise NotFound("metrics are disabled (SANDLOT_METRICS_ENABLED=false)")
        return Response(
            await services.health.metrics(), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    @get(
        "/readyz",
        summary="The database and the runtime answer",
        responses={503: ResponseSpec(dict[str, Any], description="Not ready: the checks say which part")},
    )
    async def readyz(self, services: ServicesDep) -> Response[dict[str, Any]]:
        checks = await services.health.checks()
        ready = all(v == "ok" for v in checks.values())
        return Response(
            {
                "status": "ready" if ready else "not ready",
                "checks": checks,
                "runtime": services.health.runtime_name,
            },
            status_code=200 if ready else 503,
        )
