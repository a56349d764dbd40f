"""What a caller's console overview shows: its sandboxes by status, the fill of its pools, and
whether the database and the runtime answer (an operator sees every tenant)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.keys import Scope
from sandlot.services.accounts import Principal
from sandlot.services.environments import EnvironmentService
from sandlot.services.health import HealthService
from sandlot.services.pools import PoolService
from sandlot.store.repositories import PoolRepository, SandboxRepository

__all__ = ["Overview", "OverviewService", "PoolFill"]


@dataclass(frozen=True, slots=True)
class PoolFill:
    environment: str
    image: str
    ready: int
    target: int


@dataclass(frozen=True, slots=True)
class Overview:
    by_status: dict[str, int]
    pools: list[PoolFill]
    checks: dict[str, str]
    runtime: str

    @property
    def live(self) -> int:
        return sum(n for status, n in self.by_status.items() if status != "offline")


class OverviewService:
    def __init__(
        self,
        reads: async_sessionmaker[AsyncSession],
        environments: EnvironmentService,
        pools: PoolService,
        health: HealthService,
    ) -> None:
        self._reads = reads
        self._environments = environments
        self._pools = pools
        self._health = health

    async def of(self, principal: Principal) -> Overview:
        principal.require(Scope.SANDBOXES_READ)
        envs = await self._environments.list(principal)
        fills: list[PoolFill] = []
        async with self._reads() as session:
            by_status = await SandboxRepository(session, principal.visible_tenant).by_status()
            repo = PoolRepository(session)
            for env in envs:
                counts = await repo.counts(env.id)
                for image in env.images:
                    ready = counts.get((image, "ready"), 0)
                    fills.append(PoolFill(env.name, image, ready, self._pools.bounds(env, image).min))
        return Overview(by_status, fills, await self._health.checks(), self._health.runtime_name)
