"""Environments, scoped to one tenant."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from sandlot.domain.errors import Conflict, InvalidInput, NotFound
from sandlot.store.tables import ID_RE, Environment

__all__ = ["EnvironmentRepository"]


class EnvironmentRepository:
    """Environments of one tenant (``tenant_id=None``: all, for background loops)."""

    def __init__(self, session: AsyncSession, tenant_id: str | None) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def _scoped(self) -> SelectOfScalar[Environment]:
        query = select(Environment)
        if self.tenant_id is not None:
            query = query.where(col(Environment.tenant_id) == self.tenant_id)
        return query

    async def add(self, env: Environment) -> Environment:
        if await self.by_name(env.name) is not None:
            raise Conflict(f"an environment named {env.name!r} exists", name=env.name)
        self.session.add(env)
        await self.session.flush()
        return env

    async def by_name(self, name: str) -> Environment | None:
        query = self._scoped().where(col(Environment.name) == name)
        return (await self.session.scalars(query)).first()

    async def get(self, id_or_name: str) -> Environment:
        """The environment with this id, or else this name. A name is one tenant's: across
        every tenant (an operator's view) a name two tenants use names neither (422)."""
        column = Environment.id if ID_RE.fullmatch(id_or_name) else Environment.name
        found = (await self.session.scalars(self._scoped().where(col(column) == id_or_name).limit(2))).all()
        if not found:
            raise NotFound(f"no environment {id_or_name!r}")
        if len(found) > 1:
            raise InvalidInput(
                f"more than one tenant has an environment named {id_or_name!r}: name it by its id",
                field="environment",
            )
        return found[0]

    async def list(self) -> Sequence[Environment]:
        return (await self.session.scalars(self._scoped().order_by(col(Environment.name)))).all()

    async def delete(self, env: Environment) -> None:
        await self.session.delete(env)
        await self.session.flush()
