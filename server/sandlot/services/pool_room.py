"""Room in a tenant's quota made by its own idle pool sandboxes.

Idle warm members count against their tenant's quotas (sandboxes, memory, CPUs, disk): they
hold what they will use. A tenant whose pools sit full of idle members (an idle pool stays at
the size its busiest moment took it to) had every start elsewhere refused with 429 while
nothing of it was in use (#28). A start such a quota refuses takes one of those members down
first, the longest idle of those its pool holds beyond its minimum, and tries again; a pool is
never taken below its minimum (it would only be refilled, against the same quota).
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import QuotaExceeded
from sandlot.domain.pools import bounds_for
from sandlot.domain.status import SandboxStatus
from sandlot.services.sandboxes import SandboxService
from sandlot.store.repositories import EnvironmentRepository, PoolRepository

__all__ = ["HELD_BY_SANDBOXES", "give_way"]

#: The quotas an idle sandbox holds a share of.
HELD_BY_SANDBOXES = frozenset({"sandboxes", "memory_mb", "cpus", "disk_mb"})


async def give_way(
    reads: async_sessionmaker[AsyncSession], sandboxes: SandboxService, refused: QuotaExceeded, tenant_id: str
) -> bool:
    """Shut down one of the tenant's idle pool sandboxes held beyond its pool's minimum, for a
    start that ``refused`` turned away; False when the quota is not one they hold, or there is
    none to take (the caller then answers the refusal)."""
    if refused.extra.get("quota") not in HELD_BY_SANDBOXES:
        return False
    async with reads() as session:
        idle = await PoolRepository(session).idle_of_tenant(tenant_id)
        envs = {e.id: e for e in await EnvironmentRepository(session, tenant_id).list()}
    ready = Counter((r.environment_id, r.image) for r in idle)
    for row in idle:
        env = envs.get(row.environment_id or "")
        if env is None or ready[(env.id, row.image)] <= bounds_for(env.pool_size, row.image).min:
            continue
        reason = f"gave way to a start its tenant's {refused.extra.get('quota')} quota refused"
        if await sandboxes.shutdown(row.id, reason, only_if=SandboxStatus.READY):
            return True
        ready[(env.id, row.image)] -= 1  # claimed meanwhile: no longer idle
    return False
