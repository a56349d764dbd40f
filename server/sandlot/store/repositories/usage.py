"""What a tenant uses now, against its quotas: live sandboxes (their count, memory, CPUs and
disk), live sessions (active or suspended: both hold a sandbox), and snapshot storage (each
content once: see :func:`content.snapshot_storage`)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, bindparam, func, literal_column
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.status import SESSION_ACTIVE, SESSION_SUSPENDED
from sandlot.store.repositories.content import snapshot_storage
from sandlot.store.repositories.sandboxes import ACTIVE
from sandlot.store.tables import ApiKey, Environment, Sandbox, Session, Tenant

__all__ = ["TenantUsage", "environment_count", "live_keys", "live_sessions", "tenant_usage"]

_LIVE = (SESSION_ACTIVE, SESSION_SUSPENDED)


@dataclass(frozen=True, slots=True)
class TenantUsage:
    sandboxes: int
    memory_mb: int
    cpus: float
    disk_mb: int
    sessions: int
    snapshot_bytes: int
    snapshot_blobs: int
    keys: int
    environments: int


async def tenant_usage(session: AsyncSession, tenant_id: str) -> TenantUsage:
    boxes = select(
        func.count(),
        func.coalesce(func.sum(col(Sandbox.memory_mb)), 0),
        func.coalesce(func.sum(col(Sandbox.cpus)), 0.0),
        func.coalesce(func.sum(col(Sandbox.disk_mb)), 0),
    ).where(col(Sandbox.tenant_id) == tenant_id, col(Sandbox.status).in_(ACTIVE))
    count, memory, cpus, disk = (await session.execute(boxes)).one()
    sessions = select(func.count()).where(col(Session.tenant_id) == tenant_id, col(Session.status).in_(_LIVE))
    stored, blobs = await snapshot_storage(session, tenant_id)
    return TenantUsage(
        sandboxes=int(count),
        memory_mb=int(memory),
        cpus=float(cpus),
        disk_mb=int(disk or 0),
        sessions=int((await session.execute(sessions)).scalar_one()),
        snapshot_bytes=stored,
        snapshot_blobs=blobs,
        keys=await live_keys(session, tenant_id),
        environments=await environment_count(session, tenant_id),
    )


async def live_keys(session: AsyncSession, tenant_id: str) -> int:
    """The tenant's API keys not revoked."""
    query = select(func.count()).where(col(ApiKey.tenant_id) == tenant_id, col(ApiKey.revoked_at).is_(None))
    return int((await session.execute(query)).scalar_one())


async def environment_count(session: AsyncSession, tenant_id: str) -> int:
    query = select(func.count()).where(col(Environment.tenant_id) == tenant_id)
    return int((await session.execute(query)).scalar_one())


@functools.cache
def _live_sessions_statement() -> Any:
    """(the tenant's session quota, its live sessions), for parameter ``tenant_id``; built once
    (building it cost more than running it, on a session's start)."""
    tenant_id = bindparam("tenant_id", type_=String)
    # the statuses as literals: an IN of bound values is re-rendered at every execution
    live = col(Session.status).in_([literal_column(f"'{status}'") for status in _LIVE])
    count = select(func.count()).where(col(Session.tenant_id) == tenant_id, live).scalar_subquery()
    return select(col(Tenant.max_sessions), count).where(col(Tenant.id) == tenant_id)


async def live_sessions(session: AsyncSession, tenant_id: str) -> tuple[int, int]:
    """(the tenant's session quota, its live sessions) in one query (on a session's hot path)."""
    quota, live = (await session.execute(_live_sessions_statement(), {"tenant_id": tenant_id})).one()
    return int(quota), int(live)
