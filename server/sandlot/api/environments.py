"""``/v1/environments``: tenant-scoped environments (CRUD) and the feature catalogue."""

from __future__ import annotations

from typing import Any

from litestar import Controller, delete, get, patch, post
from litestar.params import FromPath, JSONBody

from sandlot.api.deps import PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.api.schemas import EnvironmentCreate, EnvironmentOut, EnvironmentUpdate

__all__ = ["EnvironmentController"]


class EnvironmentController(Controller):
    path = "/v1/environments"
    tags = ["environments"]

    @post("/", status_code=201, summary="Create an environment", responses=problems(404, 409, 413))
    async def create(
        self, data: JSONBody[EnvironmentCreate], services: ServicesDep, principal: PrincipalDep
    ) -> EnvironmentOut:
        fields = data.model_dump(exclude={"name"})
        env = await services.environments.create(principal, data.name, fields)
        return EnvironmentOut.of(env)

    @get("/", summary="List environments", responses=problems())
    async def list_environments(self, services: ServicesDep, principal: PrincipalDep) -> list[EnvironmentOut]:
        return [EnvironmentOut.of(e) for e in await services.environments.list(principal)]

    @get("/{environment:str}", summary="Get an environment (by id or name)", responses=problems(404))
    async def get_environment(
        self, environment: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> EnvironmentOut:
        return EnvironmentOut.of(await services.environments.get(principal, environment))

    @patch(
        "/{environment:str}",
        summary="Change some fields of an environment",
        responses=problems(404, 409, 413),
    )
    async def update(
        self,
        environment: FromPath[str],
        data: JSONBody[EnvironmentUpdate],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> EnvironmentOut:
        fields = data.model_dump(exclude_unset=True)
        return EnvironmentOut.of(await services.environments.update(principal, environment, fields))

    @delete(
        "/{environment:str}", summary="Delete an environment and drain its pool", responses=problems(404, 409)
    )
    async def delete_environment(
        self, environment: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> None:
        env = await services.environments.delete(principal, environment)
        await services.pools.drain(env)

    @get("/-/features", summary="Features this service offers, with their activities", responses=problems())
    async def features(self, services: ServicesDep, principal: PrincipalDep) -> list[dict[str, Any]]:
        return services.environments.features.describe()
