"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from sqlalchemy import text

from sandlot.api.deps import ServicesDep
from sandlot.domain.errors import NotFound, SandlotError
from sandlot.observability.metrics import METRICS

__all__ = ["HealthController"]


class HealthController(Controller):
    tags = ["health"]

    @get("/healthz", summary="The process answers")
    async def healthz(self, services: ServicesDep) -> dict[str, str]:
        return {"status": "ok", "boot_id": services.settings.boot_id}

    @get(
        "/metrics",
        summary="Prometheus metrics (no tenant data in them)",
        media_type="text/plain; version=0.0.4; charset=utf-8",
    )
    async def metrics(self, services: ServicesDep) -> Response[bytes]:
        if not services.settings.metrics_enabled:
            raise NotFound("metrics are disabled (SANDLOT_METRICS_ENABLED=false)")
        by_status, pools = await services.pools.figures()
        try:
            await services.sandboxes.runtime.ping()
            up = True
        except SandlotError:
            up = False
        METRICS.refresh(by_status, pools, services.sandboxes.runtime.name, up)
        return Response(METRICS.render(), media_type="text/plain; version=0.0.4; charset=utf-8")

    @get("/readyz", summary="The database and the runtime answer")
    async def readyz(self, services: ServicesDep) -> Response[dict[str, Any]]:
        checks: dict[str, str] = {}
        try:
            async with services.sandboxes.sessions() as session:
                await session.execute(text("SELECT 1"))
            checks["database"] = "ok"
        except Exception as exc:
            checks["database"] = f"error: {type(exc).__name__}"
        try:
            await services.sandboxes.runtime.ping()
            checks["runtime"] = "ok"
        except SandlotError as exc:
            checks["runtime"] = f"error: {exc.message}"
        ready = all(v == "ok" for v in checks.values())
        return Response(
            {
                "status": "ready" if ready else "not ready",
                "checks": checks,
                "runtime": services.sandboxes.runtime.name,
            },
            status_code=200 if ready else 503,
        )
