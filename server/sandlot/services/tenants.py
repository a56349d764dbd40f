"""Tenants and keys as callers manage them (the HTTP API and the console): operators manage
every tenant and key; a tenant key sees its own tenant, and manages its own tenant's keys with
no more scopes than it holds. Another tenant's tenant or key is "not found", as everywhere.

:class:`~sandlot.services.accounts.AccountService` does the writes (and forgets a revoked
key's cached principal); this service decides who may ask for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import NotFound, NotPermitted
from sandlot.domain.keys import TENANT_SCOPES, Scope
from sandlot.services.accounts import AccountService, CreatedKey, Principal
from sandlot.store.repositories import ApiKeyRepository, TenantRepository
from sandlot.store.repositories.usage import TenantUsage, tenant_usage
from sandlot.store.tables import ApiKey, Tenant

__all__ = ["TenantService"]


class TenantService:
    def __init__(self, accounts: AccountService, reads: async_sessionmaker[AsyncSession]) -> None:
        self._accounts = accounts
        self._reads = reads

    async def create_tenant(self, principal: Principal, name: str, **quota: Any) -> Tenant:
        principal.require(Scope.OPERATOR)
        return await self._accounts.create_tenant(name, **quota)

    async def tenants(self, principal: Principal) -> Sequence[Tenant]:
        principal.require(Scope.SANDBOXES_READ)  # a scraper's key (metrics:read) reads no tenant
        if principal.is_operator:
            return await self._accounts.list_tenants()
        return [await self.tenant(principal, principal.tenant_id)]

    async def tenant(self, principal: Principal, id_or_name: str) -> Tenant:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            found = await TenantRepository(session).resolve(id_or_name)
        if not principal.is_operator and found.id != principal.tenant_id:
            raise NotFound(f"no tenant {id_or_name!r}")
        return found

    async def update_tenant(self, principal: Principal, id_or_name: str, **fields: Any) -> Tenant:
        """Change a tenant's quotas or network permission (operators; another tenant's is
        "not found" to a tenant key, as everywhere, and its own is not permitted)."""
        found = await self.tenant(principal, id_or_name)
        principal.require(Scope.OPERATOR)
        return await self._accounts.update_tenant(found.id, **fields)

    async def usage(self, principal: Principal, tenants: Sequence[Tenant]) -> dict[str, TenantUsage]:
        """What each tenant the caller may see uses now, against its quotas."""
        principal.require(Scope.SANDBOXES_READ)
        visible = [t for t in tenants if principal.is_operator or t.id == principal.tenant_id]
        async with self._reads() as session:
            return {t.id: await tenant_usage(session, t.id) for t in visible}

    async def create_key(
        self, principal: Principal, *, tenant: str | None, name: str, scopes: Sequence[str] | None
    ) -> CreatedKey:
        """A key for ``tenant`` (the caller's own when None). Without ``scopes`` it gets the
        tenant scopes (operators) or the caller's own scopes (a tenant key). A key that holds
        neither tenant scope (a scraper's, ``metrics:read``) manages no key: leaked from a
        scrape configuration, it could revoke its tenant's, the operators', keys."""
        principal.require(Scope.SANDBOXES_READ)
        owner = (await self.tenant(principal, tenant)).id if tenant is not None else principal.tenant_id
        if scopes is None:
            wanted = set(TENANT_SCOPES) if principal.is_operator else set(principal.scopes)
        else:
            wanted = set(scopes)
        beyond = set() if principal.is_operator else wanted - principal.scopes
        if beyond:
            raise NotPermitted(f"a key cannot grant scopes it lacks: {sorted(beyond)}", scope=min(beyond))
        return await self._accounts.create_key(owner, name=name, scopes=sorted(wanted))

    async def keys(self, principal: Principal, tenant: str | None) -> Sequence[ApiKey]:
        principal.require(Scope.SANDBOXES_READ)
        if tenant is not None:
            owner: str | None = (await self.tenant(principal, tenant)).id
        else:
            owner = None if principal.is_operator else principal.tenant_id
        async with self._reads() as session:
            return await ApiKeyRepository(session).list(owner)

    async def revoke_key(self, principal: Principal, key_id: str) -> ApiKey:
        """Revoke a key of the caller's tenant (any, for operators), with a tenant scope."""
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            key = await session.get(ApiKey, key_id)
        if key is None or (not principal.is_operator and key.tenant_id != principal.tenant_id):
            raise NotFound(f"no API key {key_id}")
        return await self._accounts.revoke_key(key.id)
