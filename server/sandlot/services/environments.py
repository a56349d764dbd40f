"""Environments: tenant-scoped configuration of images, features, pools and sandbox defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import InvalidInput
from sandlot.domain.keys import Scope
from sandlot.domain.pools import parse_pool_size
from sandlot.features.registry import FeatureRegistry
from sandlot.services.accounts import Principal
from sandlot.services.sandboxes import IMAGE_RE, validate_env
from sandlot.store.repositories import EnvironmentRepository
from sandlot.store.tables import Environment
from sandlot.store.types import utcnow

__all__ = ["EnvironmentService"]

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
        "session_ttl_seconds",
        "idle_timeout_seconds",
        "outage_grace_period_seconds",
        "housekeeping_interval_seconds",
    }
)


class EnvironmentService:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        features: FeatureRegistry,
        reads: async_sessionmaker[AsyncSession] | None = None,
    ) -> None:
        self._sessions = sessions
        self._reads = reads or sessions
        self.features = features

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

    async def create(self, principal: Principal, name: str, fields: Mapping[str, Any]) -> Environment:
        principal.require(Scope.SANDBOXES_WRITE)
        unknown = set(fields) - _EDITABLE
        if unknown:
            raise InvalidInput(f"unknown fields {sorted(unknown)}")
        self._validate({"images": fields.get("images"), **fields})
        env = Environment(tenant_id=principal.tenant_id, name=name, **fields)
        async with self._sessions.begin() as session:
            return await EnvironmentRepository(session, principal.tenant_id).add(env)

    async def get(self, principal: Principal, id_or_name: str) -> Environment:
        principal.require(Scope.SANDBOXES_READ)
        async with self._reads() as session:
            return await EnvironmentRepository(session, principal.visible_tenant).get(id_or_name)

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
        async with self._sessions.begin() as session:
            env = await EnvironmentRepository(session, principal.visible_tenant).get(id_or_name)
            for key, value in fields.items():
                setattr(env, key, value)
            env.updated_at = utcnow()
            return env

    async def delete(self, principal: Principal, id_or_name: str) -> Environment:
        """Delete an environment; the caller drains its pool first."""
        principal.require(Scope.SANDBOXES_WRITE)
        async with self._sessions.begin() as session:
            repo = EnvironmentRepository(session, principal.visible_tenant)
            env = await repo.get(id_or_name)
            await repo.delete(env)
            return env

    async def all(self) -> Sequence[Environment]:
        """Every tenant's environments, for the background loops."""
        async with self._sessions() as session:
            return await EnvironmentRepository(session, None).list()
