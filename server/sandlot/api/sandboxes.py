"""``/v1/sandboxes``: create, list, inspect, delete, exec, files."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Request, delete, get, post, put
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import Stream

from sandlot.api.deps import Limit, Offset, PrincipalDep, ServicesDep, StatusFilter, body_chunks
from sandlot.api.problems import problems
from sandlot.api.schemas import (
    ExecIn,
    ExecOut,
    FileWritten,
    SandboxCreate,
    SandboxEventOut,
    SandboxOut,
)
from sandlot.api.streams import ArgsBytes, split_body, validated
from sandlot.domain.errors import InvalidInput
from sandlot.services.sandboxes import NewSandbox
from sandlot.store.repositories import SandboxQuery

__all__ = ["SandboxController", "SandboxFilesController", "SandboxStreamController"]

PathQuery = Annotated[str, QueryParameter(min_length=1, max_length=4096)]


class SandboxController(Controller):
    path = "/v1/sandboxes"
    tags = ["sandboxes"]

    @post("/", status_code=201, summary="Create a sandbox", responses=problems(404, 409, 413, 503))
    async def create(
        self, data: JSONBody[SandboxCreate], services: ServicesDep, principal: PrincipalDep
    ) -> SandboxOut:
        row = await services.sandboxes.create(principal, NewSandbox(**data.model_dump()))
        return SandboxOut.of(row)

    @get("/", summary="List sandboxes", responses=problems())
    async def list_sandboxes(
        self,
        services: ServicesDep,
        principal: PrincipalDep,
        status: StatusFilter = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> list[SandboxOut]:
        query = SandboxQuery(statuses=status, limit=limit, offset=offset)
        rows = await services.sandboxes.list(principal, query)
        return [SandboxOut.of(r) for r in rows]

    @get("/{sandbox_id:str}", summary="Get a sandbox", responses=problems(404))
    async def get_sandbox(
        self, sandbox_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> SandboxOut:
        return SandboxOut.of(await services.sandboxes.get(principal, sandbox_id))

    @get("/{sandbox_id:str}/events", summary="Status history of a sandbox", responses=problems(404))
    async def events(
        self, sandbox_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> list[SandboxEventOut]:
        return [SandboxEventOut.of(e) for e in await services.sandboxes.events(principal, sandbox_id)]

    @delete(
        "/{sandbox_id:str}",
        summary="Delete a sandbox and its container",
        responses=problems(404, 409, 502, 503),
    )
    async def delete_sandbox(
        self, sandbox_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> None:
        await services.sandboxes.delete(principal, sandbox_id)

    @post(
        "/{sandbox_id:str}/exec",
        status_code=200,
        summary="Run a command to completion",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def exec_command(
        self,
        sandbox_id: FromPath[str],
        data: JSONBody[ExecIn],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> ExecOut:
        request = data.request(data.stdin_bytes(), services.settings.exec_output_limit)
        return ExecOut.from_result(await services.sandboxes.exec(principal, sandbox_id, request))


class SandboxStreamController(Controller):
    """A command whose stdin streams in the body; mounted with the file-size limit."""

    path = "/v1/sandboxes/{sandbox_id:str}/exec/stream"
    tags = ["sandboxes"]

    @post(
        "/",
        status_code=200,
        summary="Run a command with its stdin streamed: the body is ExecIn as JSON "
        "(?args_bytes= long, without stdin), then the raw stdin",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def exec_streamed(
        self,
        sandbox_id: FromPath[str],
        args_bytes: ArgsBytes,
        request: Request,
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> ExecOut:
        args, upload = await split_body(request, args_bytes, services.settings.max_arguments_bytes)
        data = validated(ExecIn, args)
        if data.stdin is not None:
            raise InvalidInput("stdin: streamed in the body, so not among the arguments too", field="stdin")
        command = data.request(upload.chunks, services.settings.exec_output_limit)
        return ExecOut.from_result(await services.sandboxes.exec(principal, sandbox_id, command))


class SandboxFilesController(Controller):
    """Raw file bodies; mounted with the larger file-size limit."""

    path = "/v1/sandboxes/{sandbox_id:str}/files"
    tags = ["files"]

    @put(
        "/",
        summary="Write a file (raw body) at ?path= in the workspace",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def write_file(
        self,
        sandbox_id: FromPath[str],
        path: PathQuery,
        request: Request,
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> FileWritten:
        where, size = await services.sandboxes.write_file(
            principal, sandbox_id, path, body_chunks(request), request.content_length
        )
        return FileWritten(path=where, size=size)

    @get(
        "/",
        summary="Read the file at ?path= in the workspace",
        media_type="application/octet-stream",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def read_file(
        self, sandbox_id: FromPath[str], path: PathQuery, services: ServicesDep, principal: PrincipalDep
    ) -> Stream:
        found = await services.sandboxes.read_file(principal, sandbox_id, path)
        return Stream(
            found.chunks,
            media_type="application/octet-stream",
            headers={"Content-Length": str(found.size)},
        )
