"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Response, get
from sqlalchemy import text

from sandlot.api.deps import ServicesDep
from sandlot.domain.errors import SandlotError

__all__ = ["HealthController"]


class HealthController(Controller):
    tags = ["health"]

    @get("/healthz", summary="The process answers")
    async def healthz(self) -> dict[str, str]:
        return {"status": "ok"}

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
