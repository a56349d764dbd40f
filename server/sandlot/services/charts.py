"""The console's charts of the last hour, a point a minute, from what the store keeps (so every
API process draws the same charts, unlike per-process Prometheus counters): sandboxes running,
acquires (warm from the pool, cold created), and shell command latency (p50, p99)."""

from __future__ import annotations

import bisect
import statistics
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.keys import Scope
from sandlot.services.accounts import Principal
from sandlot.store.repositories import StatsRepository
from sandlot.store.types import utcnow

__all__ = ["MINUTES", "ChartService"]

MINUTES = 60


def _minute(at: datetime) -> datetime:
    return at.replace(second=0, microsecond=0)


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 3)
    return round(statistics.quantiles(values, n=100, method="inclusive")[int(share * 100) - 1], 3)


def _running(lifetimes: Sequence[tuple[datetime, datetime | None]], ends: list[datetime]) -> list[int]:
    """Sandboxes alive at each of ``ends``: created before it, not yet offline (two sorted
    lists and a binary search each, not a pass over every sandbox per minute)."""
    created = sorted(c for c, _ in lifetimes)
    gone = sorted(off for _, off in lifetimes if off is not None)
    return [bisect.bisect_left(created, end) - bisect.bisect_left(gone, end) for end in ends]


class ChartService:
    def __init__(self, reads: async_sessionmaker[AsyncSession]) -> None:
        self._reads = reads

    async def last_hour(self, principal: Principal) -> dict[str, Any]:
        """Series for uPlot: ``t`` (minute starts, Unix seconds) and one list per line."""
        principal.require(Scope.SANDBOXES_READ)
        now = _minute(utcnow())
        minutes = [now - timedelta(minutes=MINUTES - 1 - i) for i in range(MINUTES)]
        since = minutes[0]
        async with self._reads() as session:
            repo = StatsRepository(session, principal.visible_tenant)
            acquires = await repo.acquires(since)
            lifetimes = await repo.lifetimes(since)
            commands = await repo.command_times(since)
        warm: dict[datetime, int] = defaultdict(int)
        cold: dict[datetime, int] = defaultdict(int)
        for at, is_warm in acquires:
            (warm if is_warm else cold)[_minute(at)] += 1
        latencies: dict[datetime, list[float]] = defaultdict(list)
        for at, ms in commands:
            latencies[_minute(at)].append(ms)
        ends = [m + timedelta(minutes=1) for m in minutes]
        return {
            "t": [int(m.timestamp()) for m in minutes],
            "running": [
                sum(1 for c, off in lifetimes if c < end and (off is None or off >= end)) for end in ends
            ],
            "warm": [warm[m] for m in minutes],
            "cold": [cold[m] for m in minutes],
            "p50": [_percentile(latencies[m], 0.5) for m in minutes],
            "p99": [_percentile(latencies[m], 0.99) for m in minutes],
        }
