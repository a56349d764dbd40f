"""The checks a new sandbox must pass before its row is written: the tenant's quota and the pool's max.

They run inside the transaction that adds the row, under a lock on the tenant row, so two
processes creating sandboxes for one tenant at once cannot both pass a check that only one of
them fits under. Kept apart from :mod:`sandlot.services.sandboxes` so the rules read in one place.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.errors import NoCapacity, NotPermitted, QuotaExceeded
from sandlot.runtime.base import Limits
from sandlot.store.repositories import PoolRepository, SandboxRepository
from sandlot.store.tables import Tenant

__all__ = ["check_quota"]


async def _lock_tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    """Lock the tenant row so concurrent creates cannot both pass the quota check."""
    query = select(Tenant).where(col(Tenant.id) == tenant_id).with_for_update()
    tenant = (await session.scalars(query)).one()
    return tenant


async def check_quota(
    session: AsyncSession,
    tenant_id: str,
    image: str,
    limits: Limits,
    *,
    network: bool,
    pool_max: tuple[str, int] | None,
) -> None:
    """Refuse a new sandbox the tenant may not have: network access it is not allowed, one past
    its count, memory or cpu quota, or (``pool_max`` = (environment id, max)) one more in a pool
    that already has ``max`` live sandboxes of ``image``. Locks the tenant row first."""
    tenant = await _lock_tenant(session, tenant_id)
    if network and not tenant.allow_network:
        raise NotPermitted("this tenant may not create sandboxes with network access")
    count, memory, cpus = await SandboxRepository(session, tenant_id).usage()
    if count + 1 > tenant.max_sandboxes:
        raise QuotaExceeded(f"tenant has {count} live sandboxes; its quota is {tenant.max_sandboxes}")
    if memory + limits.memory_mb > tenant.max_memory_mb:
        raise QuotaExceeded(f"memory quota is {tenant.max_memory_mb} MB; {memory} MB in use")
    if cpus + limits.cpus > tenant.max_cpus + 1e-9:
        raise QuotaExceeded(f"cpu quota is {tenant.max_cpus}; {cpus:g} in use")
    if pool_max is not None:
        env_id, most = pool_max
        counts = await PoolRepository(session).counts(env_id)
        if sum(n for (img, _), n in counts.items() if img == image) >= most:
            raise NoCapacity(f"the {image!r} pool is full ({most} sandboxes); retry shortly", retry_after=2)
