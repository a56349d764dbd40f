"""``/v1/assets``: a tenant's files and tar archives for session workspaces."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Request, delete, get, put
from litestar.params import FromPath, QueryParameter

from sandlot.api.deps import PrincipalDep, ServicesDep, body_chunks
from sandlot.api.problems import problems
from sandlot.api.schemas import AssetOut

__all__ = ["AssetController"]


class AssetController(Controller):
    """Raw bodies; mounted with the larger file-size limit."""

    path = "/v1/assets"
    tags = ["assets"]

    @put(
        "/{name:str}",
        status_code=201,
        summary="Upload an asset (raw body); ?archive=true for a tar (optionally gzipped)",
        responses=problems(409, 413, 507),
    )
    async def upload(
        self,
        name: FromPath[str],
        request: Request,
        services: ServicesDep,
        principal: PrincipalDep,
        archive: Annotated[bool, QueryParameter()] = False,
    ) -> AssetOut:
        row = await services.assets.upload(principal, name, body_chunks(request), archive=archive)
        return AssetOut.of(row)

    @get("/", summary="List the tenant's assets", responses=problems())
    async def list_assets(self, services: ServicesDep, principal: PrincipalDep) -> list[AssetOut]:
        return [AssetOut.of(a) for a in await services.assets.list(principal)]

    @get("/{name:str}", summary="One asset's metadata", responses=problems(404))
    async def get_asset(
        self, name: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> AssetOut:
        return AssetOut.of(await services.assets.get(principal, name))

    @delete("/{name:str}", summary="Delete an asset", responses=problems(404))
    async def delete_asset(self, name: FromPath[str], services: ServicesDep, principal: PrincipalDep) -> None:
        await services.assets.delete(principal, name)
