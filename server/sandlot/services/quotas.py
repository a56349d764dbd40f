"""The checks a tenant's new sandbox, session or snapshot must pass: its quotas, and the pool's max.

The sandbox check runs inside the transaction that adds the row, under a lock on the tenant
row, so two processes creating sandboxes for one tenant at once cannot both pass a check that
only one of them fits under. A refusal is :class:`QuotaExceeded` (429) naming the quota, its
limit and what is in use. Kept apart from the services so the rules read in one place.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.errors import NoCapacity, NotPermitted, QuotaExceeded
from sandlot.runtime.base import Limits
from sandlot.store.repositories import PoolRepository
from sandlot.store.repositories.content import snapshot_storage
from sandlot.store.repositories.usage import (
    TenantUsage,
    environment_count,
    live_keys,
    live_sessions,
    tenant_usage,
)
from sandlot.store.tables import Tenant

__all__ = [
    "check_environments",
    "check_keys",
    "check_quota",
    "check_sessions",
    "check_snapshots",
    "refuse_sessions",
    "reserve_snapshot",
    "tenant_ttl",
]


async def _lock_tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    """Lock the tenant row so concurrent creates cannot both pass the quota check."""
    query = select(Tenant).where(col(Tenant.id) == tenant_id).with_for_update()
    tenant = (await session.scalars(query)).one()
    return tenant


def _over(quota: str, limit: float, used: float, unit: str = "") -> QuotaExceeded:
    return QuotaExceeded(
        f"the tenant's {quota} quota is {limit:g}{unit}; {used:g}{unit} in use",
        quota=quota,
        limit=limit,
        used=used,
    )


def _sandbox_limits(tenant: Tenant, use: TenantUsage, limits: Limits) -> None:
    if use.sandboxes + 1 > tenant.max_sandboxes:
        raise _over("sandboxes", tenant.max_sandboxes, use.sandboxes)
    if use.memory_mb + limits.memory_mb > tenant.max_memory_mb:
        raise _over("memory_mb", tenant.max_memory_mb, use.memory_mb, " MB")
    if use.cpus + limits.cpus > tenant.max_cpus + 1e-9:
        raise _over("cpus", tenant.max_cpus, use.cpus)
    if limits.disk_mb is not None and use.disk_mb + limits.disk_mb > tenant.max_disk_mb:
        raise _over("disk_mb", tenant.max_disk_mb, use.disk_mb, " MB")


async def check_quota(
    session: AsyncSession,
    tenant_id: str,
    image: str,
    limits: Limits,
    *,
    network: bool,
    pool_max: tuple[str, int] | None,
    ttl: int | None = None,
) -> None:
    """Refuse a new sandbox the tenant may not have: network access it is not allowed, a ttl
    it asked for (``ttl``) past its longest, one past its count, memory, cpu or disk quota, or (``pool_max`` =
    (environment id, max)) one more in a pool that already has ``max`` live sandboxes of
    ``image``. Locks the tenant row first."""
    tenant = await _lock_tenant(session, tenant_id)
    if network and not tenant.allow_network:
        raise NotPermitted("this tenant may not create sandboxes with network access")
    if tenant.max_ttl_seconds is not None and ttl is not None and ttl > tenant.max_ttl_seconds:
        raise _over("ttl_seconds", tenant.max_ttl_seconds, ttl, " s")
    _sandbox_limits(tenant, await tenant_usage(session, tenant_id), limits)
    if pool_max is not None:
        env_id, most = pool_max
        counts = await PoolRepository(session).counts(env_id)
        if sum(n for (img, _), n in counts.items() if img == image) >= most:
            raise NoCapacity(f"the {image!r} pool is full ({most} sandboxes); retry shortly", retry_after=2)


async def tenant_ttl(session: AsyncSession, tenant_id: str, ttl: int | None) -> int | None:
    """A ttl the service chose itself (its default) brought within the tenant's longest."""
    most = (await session.get(Tenant, tenant_id)).max_ttl_seconds  # type: ignore[union-attr]
    if most is None:
        return ttl
    return most if ttl is None else min(ttl, most)


async def check_sessions(session: AsyncSession, tenant_id: str, *, starting: int = 1) -> None:
    """Refuse when the tenant's live sessions (active or suspended), with ``starting`` more,
    would pass its quota (``starting=0``: a check once the new one is recorded)."""
    refuse_sessions(*await live_sessions(session, tenant_id), starting=starting)


def refuse_sessions(quota: int, live: int, *, starting: int = 1) -> None:
    """:func:`check_sessions` on counts already read (``quota``, ``live``)."""
    if live + starting > quota:
        raise _over("sessions", quota, live - (1 - starting))


async def check_keys(session: AsyncSession, tenant_id: str) -> None:
    """Refuse a key past the tenant's ``max_keys`` (keys not revoked), under the tenant's lock:
    each key has a rate-limit bucket of its own, so keys without end multiply the rate."""
    tenant = await _lock_tenant(session, tenant_id)
    used = await live_keys(session, tenant_id)
    if used + 1 > tenant.max_keys:
        raise _over("keys", tenant.max_keys, used)


async def check_environments(session: AsyncSession, tenant_id: str) -> None:
    """Refuse an environment past the tenant's ``max_environments``, under the tenant's lock
    (each one's pool is work for the service)."""
    tenant = await _lock_tenant(session, tenant_id)
    used = await environment_count(session, tenant_id)
    if used + 1 > tenant.max_environments:
        raise _over("environments", tenant.max_environments, used)


async def reserve_snapshot(session: AsyncSession, tenant_id: str, adding: int) -> None:
    """Refuse a snapshot whose new contents (``adding`` bytes the tenant's store does not hold
    yet) would take what its snapshots keep past its quota. Locks the tenant row first, in the
    transaction that records the contents, so concurrent snapshots of one tenant are counted
    one after another, each with its own size."""
    tenant = await _lock_tenant(session, tenant_id)
    used = (await snapshot_storage(session, tenant_id))[0]
    if used + adding > tenant.max_snapshot_mb << 20:
        raise QuotaExceeded(
            f"the tenant's snapshot_mb quota is {tenant.max_snapshot_mb} MB; {used / (1 << 20):.1f} MB "
            f"in use, and this snapshot adds {adding / (1 << 20):.1f} MB",
            quota="snapshot_mb",
            limit=tenant.max_snapshot_mb,
            used=round(used / (1 << 20), 1),
        )


async def check_snapshots(session: AsyncSession, tenant_id: str) -> None:
    """Refuse a new snapshot once what the tenant's snapshots keep (each content once: the
    same file in many snapshots counts once) reaches its quota."""
    tenant = await session.get(Tenant, tenant_id)
    assert tenant is not None
    used_mb = (await snapshot_storage(session, tenant_id))[0] / (1 << 20)
    if used_mb >= tenant.max_snapshot_mb:
        raise _over("snapshot_mb", tenant.max_snapshot_mb, round(used_mb, 1), " MB")
