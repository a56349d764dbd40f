"""Tenants and their API keys."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import String, bindparam, func
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.errors import Conflict, NotFound
from sandlot.store.tables import (
    ApiKey,
    Tenant,
)

__all__ = ["ApiKeyRepository", "TenantRepository"]


class TenantRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, tenant: Tenant) -> Tenant:
        if await self.by_name(tenant.name) is not None:
            raise Conflict(f"a tenant named {tenant.name!r} exists", name=tenant.name)
        self.session.add(tenant)
        await self.session.flush()
        return tenant

    async def get(self, tenant_id: str) -> Tenant:
        tenant = await self.session.get(Tenant, tenant_id)
        if tenant is None:
            raise NotFound(f"no tenant {tenant_id}")
        return tenant

    async def by_name(self, name: str) -> Tenant | None:
        return (await self.session.scalars(select(Tenant).where(col(Tenant.name) == name))).first()

    async def resolve(self, id_or_name: str) -> Tenant:
        tenant = await self.session.get(Tenant, id_or_name) or await self.by_name(id_or_name)
        if tenant is None:
            raise NotFound(f"no tenant {id_or_name!r}")
        return tenant

    async def list(self) -> Sequence[Tenant]:
        return (await self.session.scalars(select(Tenant).order_by(col(Tenant.created_at)))).all()


class ApiKeyRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, key: ApiKey) -> ApiKey:
        self.session.add(key)
        await self.session.flush()
        return key

    async def by_prefix(self, prefix: str) -> ApiKey | None:
        return (await self.session.scalars(_by_prefix_statement(), {"prefix": prefix})).first()

    async def get(self, key_id: str) -> ApiKey:
        key = await self.session.get(ApiKey, key_id)
        if key is None:
            raise NotFound(f"no API key {key_id}")
        return key

    async def list(self, tenant_id: str | None = None) -> Sequence[ApiKey]:
        query = select(ApiKey).order_by(col(ApiKey.created_at))
        if tenant_id is not None:
            query = query.where(col(ApiKey.tenant_id) == tenant_id)
        return (await self.session.scalars(query)).all()

    async def count(self) -> int:
        return (await self.session.scalar(select(func.count()).select_from(ApiKey))) or 0


@functools.cache
def _by_prefix_statement() -> Any:
    """The key with parameter ``prefix``; built once (every request whose key is not cached
    reads it)."""
    return select(ApiKey).where(col(ApiKey.prefix) == bindparam("prefix", type_=String))
