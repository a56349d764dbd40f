"""Snapshots: a checkpoint's metadata and diff, its workspace as a tar, and deleting it
(checkpoints are taken, listed and restored through their session, in
:mod:`sandlot.api.sessions`)."""

from __future__ import annotations

from litestar import Controller, delete, get
from litestar.params import FromPath
from litestar.response import Stream

from sandlot.api.deps import PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.api.schemas import SnapshotOut

__all__ = ["SnapshotController"]


class SnapshotController(Controller):
    path = "/v1/snapshots"
    tags = ["snapshots"]

    @get("/{snapshot_id:str}", summary="A snapshot's metadata and diff", responses=problems(404))
    async def get_snapshot(
        self, snapshot_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> SnapshotOut:
        return SnapshotOut.of(await services.snapshots.get(principal, snapshot_id))

    @get(
        "/{snapshot_id:str}/archive",
        summary="Download the workspace as a tar",
        media_type="application/x-tar",
        responses=problems(404),
    )
    async def archive(
        self, snapshot_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> Stream:
        chunks = await services.snapshots.archive(principal, snapshot_id)
        return Stream(
            chunks,
            media_type="application/x-tar",
            headers={"Content-Disposition": f'attachment; filename="{snapshot_id}.tar"'},
        )

    @delete(
        "/{snapshot_id:str}",
        summary="Delete a snapshot (its contents go once no other snapshot needs them)",
        responses=problems(404, 409),
    )
    async def delete_snapshot(
        self, snapshot_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> None:
        await services.snapshots.delete(principal, snapshot_id)
