"""Health: whether the database and the runtime answer, and the figures for ``/metrics``."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import SandlotError
from sandlot.observability.metrics import Metrics
from sandlot.runtime.base import SandboxRuntime
from sandlot.services.pools import PoolService

__all__ = ["HealthService"]


class HealthService:
    def __init__(
        self,
        reads: async_sessionmaker[AsyncSession],
        runtime: SandboxRuntime,
        pools: PoolService,
        metrics: Metrics,
    ) -> None:
        self._metrics = metrics
        self._reads = reads
        self._runtime = runtime
        self._pools = pools

    @property
    def runtime_name(self) -> str:
        return self._runtime.name

    async def checks(self) -> dict[str, str]:
        """``database`` and ``runtime``: "ok" or "error: <why>"."""
        checks: dict[str, str] = {}
        try:
            async with self._reads() as session:
                await session.execute(text("SELECT 1"))
            checks["database"] = "ok"
        except Exception as exc:
            checks["database"] = f"error: {type(exc).__name__}"
        try:
            await self._runtime.ping()
            checks["runtime"] = "ok"
        except SandlotError as exc:
            checks["runtime"] = f"error: {exc.message}"
        return checks

    async def metrics(self) -> bytes:
        """The Prometheus text, with the gauges read fresh from the store and the runtime."""
        by_status, pools = await self._pools.figures()
        try:
            await self._runtime.ping()
            up = True
        except SandlotError:
            up = False
        self._metrics.refresh(by_status, pools, self._runtime.name, up)
        return self._metrics.render()
