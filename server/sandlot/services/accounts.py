"""Tenants, API keys and authentication."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache
from itsdangerous import BadSignature, URLSafeSerializer
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import InvalidInput, NotAuthenticated, NotPermitted
from sandlot.domain.keys import (
    ALL_SCOPES,
    TENANT_SCOPES,
    NewKey,
    Scope,
    generate_key,
    keys_match,
    split_key,
)
from sandlot.domain.quotas import QUOTAS
from sandlot.services.coalesce import Coalesced
from sandlot.services.quotas import check_keys
from sandlot.store.repositories import ApiKeyRepository, TenantRepository
from sandlot.store.repositories.tokens import TokenRepository
from sandlot.store.tables import ApiKey, Tenant
from sandlot.store.types import utcnow

__all__ = ["OPERATOR_TENANT", "AccountService", "CreatedKey", "Principal"]

#: Name of the tenant that owns operator keys (created on first start).
OPERATOR_TENANT = "operators"


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's tenant and scopes."""

    tenant_id: str
    key_id: str
    scopes: frozenset[str]

    @property
    def is_operator(self) -> bool:
        return Scope.OPERATOR.value in self.scopes

    @property
    def visible_tenant(self) -> str | None:
        """Tenant filter for reads: operators see every tenant (None)."""
        return None if self.is_operator else self.tenant_id

    def require(self, scope: Scope) -> None:
        """Raise :class:`NotPermitted` unless the key has ``scope`` (operators have all)."""
        if not self.is_operator and scope.value not in self.scopes:
            raise NotPermitted(f"this key lacks the {scope.value!r} scope", scope=scope.value)


def _set_quotas(tenant: Tenant, quota: Mapping[str, Any]) -> None:
    for field, value in quota.items():
        if field not in QUOTAS:
            raise InvalidInput(f"no quota {field!r}", field=field)
        if value is None:
            continue
        if field == "max_ttl_seconds" and not value:
            value = None  # 0: no longest of the tenant's own
        setattr(tenant, field, value)


def _signer(secret: str, audience: str) -> URLSafeSerializer:
    """Signs terminal tokens: keyed by the key's stored digest (every process can check a token,
    and revoking the key revokes it), salted by the audience (a token opens one terminal)."""
    return URLSafeSerializer(secret, salt=audience, signer_kwargs={"digest_method": hashlib.sha256})


#: What every terminal token starts with (the rest is itsdangerous' payload.signature).
TOKEN_PREFIX = "slt_"
#: Cached principals at most, the least recently used go first.
AUTH_CACHE_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: ApiKey
    plaintext: str


class AccountService:
    """Creates tenants and keys, and turns a presented key into a :class:`Principal`."""

    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        reads: async_sessionmaker[AsyncSession] | None = None,
        *,
        cache_seconds: float = 0.0,
    ) -> None:
        self._sessions = sessions
        self._reads = reads or sessions
        # presented key -> (principal, when it was checked). A revocation in this process
        # clears it at once; elsewhere it takes effect within ``cache_seconds``.
        self._cache: TTLCache[str, Principal] | None = (
            TTLCache(AUTH_CACHE_SIZE, cache_seconds) if cache_seconds > 0 else None
        )
        # prefix -> the read of that key under way: a burst with one key reads it once
        self._lookups: Coalesced[str, ApiKey | None] = Coalesced()

    async def create_tenant(self, name: str, *, allow_network: bool = False, **quota: Any) -> Tenant:
        """A tenant; quotas not given (see ``QUOTAS``) take the defaults."""
        if not name or len(name) > 100:
            raise InvalidInput("tenant name must be 1 to 100 characters")
        tenant = Tenant(name=name, allow_network=allow_network)
        _set_quotas(tenant, quota)
        async with self._sessions.begin() as session:
            return await TenantRepository(session).add(tenant)

    async def update_tenant(
        self, id_or_name: str, *, allow_network: bool | None = None, **quota: Any
    ) -> Tenant:
        """Change a tenant's quotas (those given) and network permission; what runs already
        keeps running, new sandboxes, sessions and snapshots meet the new quotas."""
        async with self._sessions.begin() as session:
            tenant = await TenantRepository(session).resolve(id_or_name)
            locked = await session.get(Tenant, tenant.id, with_for_update=True)
            assert locked is not None
            _set_quotas(locked, quota)
            if allow_network is not None:
                locked.allow_network = allow_network
            await session.flush()
            return locked

    async def list_tenants(self) -> Sequence[Tenant]:
        async with self._sessions() as session:
            return await TenantRepository(session).list()

    async def create_key(
        self,
        tenant: str,
        *,
        name: str = "",
        scopes: Iterable[str] | None = None,
        operator: bool = False,
    ) -> CreatedKey:
        """Create a key for ``tenant`` (id or name). The plaintext is returned once."""
        wanted = set(scopes) if scopes is not None else set(TENANT_SCOPES)
        if operator:
            wanted.add(Scope.OPERATOR.value)
        unknown = wanted - ALL_SCOPES
        if unknown:
            raise InvalidInput(f"unknown scopes {sorted(unknown)}; known: {sorted(ALL_SCOPES)}")
        async with self._sessions.begin() as session:
            owner = await TenantRepository(session).resolve(tenant)
            await check_keys(session, owner.id)
            new: NewKey = generate_key()
            key = ApiKey(
                tenant_id=owner.id,
                name=name,
                prefix=new.prefix,
                digest=new.digest,
                scopes=sorted(wanted),
            )
            await ApiKeyRepository(session).add(key)
        return CreatedKey(key=key, plaintext=new.plaintext)

    async def revoke_key(self, key_id_or_prefix: str) -> ApiKey:
        async with self._sessions.begin() as session:
            repo = ApiKeyRepository(session)
            key = await repo.by_prefix(key_id_or_prefix) or await repo.get(key_id_or_prefix)
            if key.revoked_at is None:
                key.revoked_at = utcnow()
        self._lookups.forget()
        if self._cache is not None:
            for token in [t for t, p in self._cache.items() if p.key_id == key.id]:
                self._cache.pop(token, None)
        return key

    async def list_keys(self, tenant: str | None = None) -> Sequence[ApiKey]:
        async with self._sessions() as session:
            tenant_id = (await TenantRepository(session).resolve(tenant)).id if tenant else None
            return await ApiKeyRepository(session).list(tenant_id)

    async def authenticate(self, authorization: str | None) -> Principal:
        """Check an ``Authorization: Bearer <key>`` header value."""
        if not authorization:
            raise NotAuthenticated("missing Authorization: Bearer <key> header")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise NotAuthenticated("expected Authorization: Bearer <key>")
        token = token.strip()
        cached = self._cache.get(token) if self._cache is not None else None
        if cached is not None:
            return cached
        prefix = split_key(token)
        key = await self._lookups.get(prefix, lambda: self._key_by_prefix(prefix))
        if key is None or not keys_match(token, key.digest):
            raise NotAuthenticated("unknown API key")
        if key.revoked_at is not None:
            raise NotAuthenticated("this API key was revoked")
        principal = Principal(tenant_id=key.tenant_id, key_id=key.id, scopes=frozenset(key.scopes))
        if self._cache is not None:
            self._cache[token] = principal
        return principal

    async def _key_by_prefix(self, prefix: str) -> ApiKey | None:
        async with self._reads() as session:
            return await ApiKeyRepository(session).by_prefix(prefix)

    async def issue_token(self, principal: Principal, audience: str, ttl: int = 60) -> tuple[str, int]:
        """A short-lived token for one ``audience`` (such as ``pty:<session id>``), for clients
        that cannot send headers (browsers opening a WebSocket); see :func:`_signer`. It is
        recorded (``issued_tokens``) under a random id it carries, so it can be used once or
        revoked. Returns the token and its expiry (Unix time)."""
        async with self._reads() as session:
            key = await session.get(ApiKey, principal.key_id)
        if key is None or key.revoked_at is not None:
            raise NotAuthenticated("this API key was revoked")
        expiry = int(time.time()) + ttl
        token_id = secrets.token_hex(16)
        async with self._sessions.begin() as session:
            await TokenRepository(session).add(token_id, key.id, audience, expiry)
        token = _signer(key.digest, audience).dumps({"key": key.prefix, "exp": expiry, "id": token_id})
        return f"{TOKEN_PREFIX}{token}", expiry

    async def authenticate_token(self, token: str, audience: str, *, once: bool = False) -> Principal:
        """The principal of a token :meth:`issue_token` made for ``audience``: signed by its
        key (not revoked), not expired, not revoked itself, and with ``once`` not used before
        (this use spends it)."""
        principal, token_id = await self._check_token(token, audience)
        if once:
            async with self._sessions.begin() as session:
                good = await TokenRepository(session).spend(token_id, principal.key_id)
        else:
            async with self._reads() as session:
                good = await TokenRepository(session).usable(token_id, principal.key_id)
        if not good:
            raise NotAuthenticated("this token was used or revoked; ask for a new one")
        return principal

    async def revoke_token(self, token: str, audience: str) -> None:
        """End a token (a console sign-out): a good one is revoked, anything else is ignored."""
        try:
            _, token_id = await self._check_token(token, audience)
        except NotAuthenticated:
            return
        async with self._sessions.begin() as session:
            await TokenRepository(session).revoke(token_id)

    async def _check_token(self, token: str, audience: str) -> tuple[Principal, str]:
        if not token.startswith(TOKEN_PREFIX):
            raise NotAuthenticated("malformed token")
        token = token.removeprefix(TOKEN_PREFIX)
        # the payload names the key whose digest checks the signature: read it unchecked first
        _, claims = URLSafeSerializer("", salt=audience).loads_unsafe(token)
        if not isinstance(claims, dict) or not isinstance(claims.get("key"), str):
            raise NotAuthenticated("malformed token")
        async with self._reads() as session:
            key = await ApiKeyRepository(session).by_prefix(claims["key"])
        if key is None or key.revoked_at is not None:
            raise NotAuthenticated("unknown or revoked key")
        try:
            checked = _signer(key.digest, audience).loads(token)
        except BadSignature:
            raise NotAuthenticated("the token is not valid here") from None
        if not isinstance(checked.get("exp"), int) or checked["exp"] < time.time():
            raise NotAuthenticated("the token expired; ask for a new one")
        if not isinstance(checked.get("id"), str):
            raise NotAuthenticated("malformed token")
        return Principal(tenant_id=key.tenant_id, key_id=key.id, scopes=frozenset(key.scopes)), checked["id"]

    async def bootstrap(self) -> CreatedKey | None:
        """On an empty store, create the operators tenant and its first key."""
        async with self._sessions() as session:
            if await ApiKeyRepository(session).count() > 0:
                return None
            existing = await TenantRepository(session).by_name(OPERATOR_TENANT)
        if existing is None:
            await self.create_tenant(OPERATOR_TENANT)
        return await self.create_key(OPERATOR_TENANT, name="bootstrap", operator=True)
