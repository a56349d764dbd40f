"""Environments: tenant-scoped configuration of images, features, pools and sandbox defaults."""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.env import validate_env
from sandlot.domain.errors import InvalidInput
from sandlot.domain.keys import Scope
from sandlot.domain.pools import parse_pool_size
from sandlot.domain.users import check_user_name
from sandlot.features.base import Feature
from sandlot.features.registry import FeatureRegistry
from sandlot.services.accounts import Principal
from sandlot.services.coalesce import Coalesced
from sandlot.services.quotas import check_environments
from sandlot.services.sandboxes import IMAGE_RE
from sandlot.store.repositories import EnvironmentRepository
from sandlot.store.tables import ID_RE, Environment
from sandlot.store.types import utcnow

__all__ = ["CONFIG_CACHE_SECONDS", "EnvironmentService"]

#: How long the request path trusts an environment's configuration (images, features, pool
#: bounds, TTLs). Changes made through this process apply at once; other processes see them
#: within this many seconds.
CONFIG_CACHE_SECONDS = 2.0

_EDITABLE = frozenset(
    {
        "images",
        "features",
        "pool_size",
        "memory_mb",
        "cpus",
        "pids",
        "disk_mb",
        "network",
        "env",
        "exec_users",
        "session_ttl_seconds",
        "idle_timeout_seconds",
        "outage_grace_period_seconds",
        "housekeeping_interval_seconds",
        "idle_action",
        "pool_idle_seconds",
    }
)


class EnvironmentService:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        features: FeatureRegistry,
        reads: async_sessionmaker[AsyncSession] | None = None,
        *,
        allowed_users: Collection[str] = (),
    ) -> None:
        self._sessions = sessions
        self._reads = reads or sessions
        self.features = features
        self._exec_users_allowed = frozenset(allowed_users)  # the service's exec_users_allowed
        self._cache: dict[tuple[str | None, str], tuple[Environment, float]] = {}
        self._feature_cache: dict[str, tuple[datetime, dict[str, Feature]]] = {}
        self._lookups: Coalesced[tuple[str | None, str], Environment] = Coalesced()

    def _validate(self, fields: Mapping[str, Any]) -> None:
        images = fields.get("images")
        if images is not None:
            if not images:
                raise InvalidInput("an environment needs at least one image", field="images")
            for image in images:
                if not IMAGE_RE.match(image):
                    raise InvalidInput(f"invalid image reference {image!r}", field="images")
        if "pool_size" in fields:
            parse_pool_size(fields["pool_size"])
        if "features" in fields:
            self.features.build(fields["features"] or {})
        if "env" in fields:
            validate_env(fields["env"] or {})
        if fields.get("idle_action") not in (None, "end", "suspend"):
            raise InvalidInput("idle_action is 'end' or 'suspend'", field="idle_action")
        for user in fields.get("exec_users") or ():
            check_user_name(user, "exec_users")
            if user not in self._exec_users_allowed:
                raise InvalidInput(
                    f"exec_users: this service lets no command run as {user!r} (its setting "
                    "exec_users_allowed does not list it)",
                    field="exec_users",
                )

    async def create(self, principal: Principal, name: str, fields: Mapping[str, Any]) -> Environment:
        principal.require(Scope.SANDBOXES_WRITE)
        unknown = set(fields) - _EDITABLE
        if unknown:
            raise InvalidInput(f"unknown fields {sorted(unknown)}")
        self._validate({"images": fields.get("images"), **fields})
        if ID_RE.fullmatch(name):
            raise InvalidInput(
                f"{name!r} looks like an id (three letters, '_', 16 hex digits): pick another name",
                field="name",
            )
        env = Environment(tenant_id=principal.tenant_id, name=name, **fields)
        async with self._sessions.begin() as session:
            await check_environments(session, principal.tenant_id)
            return await EnvironmentRepository(session, principal.tenant_id).add(env)

    async def get(self, principal: Principal, id_or_name: str) -> Environment:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            return await EnvironmentRepository(session, principal.visible_tenant).get(id_or_name)

    async def cached(self, tenant_id: str | None, id_or_name: str) -> Environment:
        """An environment's configuration, trusted for ``CONFIG_CACHE_SECONDS``."""
        key = (tenant_id, id_or_name)
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[1] < CONFIG_CACHE_SECONDS:
            return hit[0]
        env = await self._lookups.get(key, lambda: self._read(tenant_id, id_or_name))
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[key] = (env, time.monotonic())
        return env

    async def _read(self, tenant_id: str | None, id_or_name: str) -> Environment:
        async with self._reads() as session:
            return await EnvironmentRepository(session, tenant_id).get(id_or_name)

    def features_of(self, env: Environment) -> dict[str, Feature]:
        """The environment's feature instances, rebuilt when its configuration changes."""
        cached = self._feature_cache.get(env.id)
        if cached is None or cached[0] != env.updated_at:
            cached = (env.updated_at, self.features.build(env.features or {}))
            self._feature_cache[env.id] = cached
        return cached[1]

    def sandbox_features(self, env: Environment, image: str) -> list[Feature]:
        """The sandbox-based features of ``env`` that apply to ``image``."""
        return [f for f in self.features_of(env).values() if f.sandbox_based and f.applies_to(image)]

    def forget(self) -> None:
        self._cache.clear()
        self._lookups.forget()

    async def list(self, principal: Principal) -> Sequence[Environment]:
        principal.require(Scope.SANDBOXES_READ)
        async with self._sessions() as session:
            return await EnvironmentRepository(session, principal.visible_tenant).list()

    async def update(self, principal: Principal, id_or_name: str, fields: Mapping[str, Any]) -> Environment:
        principal.require(Scope.SANDBOXES_WRITE)
        unknown = set(fields) - _EDITABLE
        if unknown:
            raise InvalidInput(f"unknown fields {sorted(unknown)}")
        self._validate(fields)
        self.forget()
        async with self._sessions.begin() as session:
            env = await EnvironmentRepository(session, principal.visible_tenant).get(id_or_name)
            for key, value in fields.items():
                setattr(env, key, value)
            env.updated_at = utcnow()
            return env

    async def delete(self, principal: Principal, id_or_name: str) -> Environment:
        """Delete an environment; the caller drains its pool first."""
        principal.require(Scope.SANDBOXES_WRITE)
        self.forget()
        async with self._sessions.begin() as session:
            repo = EnvironmentRepository(session, principal.visible_tenant)
            env = await repo.get(id_or_name)
            await repo.delete(env)
            return env

    async def all(self) -> Sequence[Environment]:
        """Every tenant's environments, for the background loops."""
        async with self._sessions() as session:
            return await EnvironmentRepository(session, None).list()
