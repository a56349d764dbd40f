"""``/v1/sessions``: start, inspect and end sessions; call feature activities."""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, delete, get, post, put
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import Stream

from sandlot.api.deps import Body, Limit, Offset, PrincipalDep, ServicesDep, StatusFilter
from sandlot.api.problems import problems
from sandlot.api.schemas import (
    ActivityOut,
    ResumeOut,
    SessionCreate,
    SessionOut,
    SnapshotOut,
    WorkspaceImported,
)
from sandlot.api.streams import ArgsBytes, split_body
from sandlot.services.sessions import ManifestFile

__all__ = ["SessionController", "SessionStreamController", "SessionWorkspaceController"]


class SessionController(Controller):
    path = "/v1/sessions"
    tags = ["sessions"]

    @post(
        "/",
        status_code=201,
        summary="Start a session on a sandbox from an environment",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def start(
        self, data: JSONBody[SessionCreate], services: ServicesDep, principal: PrincipalDep
    ) -> SessionOut:
        manifest = [ManifestFile(m.path, m.data()) for m in data.manifest]
        row, warm = await services.sessions.start(
            principal,
            data.environment,
            image=data.image,
            feature=data.feature,
            session_id=data.session_id,
            manifest=manifest,
            snapshot_id=data.snapshot_id,
            assets=[(a.name, a.path) for a in data.assets],
        )
        return SessionOut.started(row, warm)

    @get("/", summary="List sessions", responses=problems())
    async def list_sessions(
        self,
        services: ServicesDep,
        principal: PrincipalDep,
        status: StatusFilter = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> list[SessionOut]:
        rows = await services.sessions.list(principal, statuses=status, limit=limit, offset=offset)
        return [SessionOut.of(r) for r in rows]

    @get("/{session_id:str}", summary="Get a session", responses=problems(404))
    async def get_session(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> SessionOut:
        return SessionOut.of(await services.sessions.get(principal, session_id))

    @delete(
        "/{session_id:str}",
        summary="End a session (its sandbox returns to the pool)",
        responses=problems(404, 409, 502, 503),
    )
    async def end(self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep) -> None:
        await services.sessions.end(principal, session_id)

    @post(
        "/{session_id:str}/features/{feature:str}/{activity:str}",
        status_code=200,
        summary="Call a feature activity with JSON arguments",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def call(
        self,
        session_id: FromPath[str],
        feature: FromPath[str],
        activity: FromPath[str],
        data: JSONBody[dict[str, Any]],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> Any:
        return await services.sessions.call(principal, session_id, feature, activity, data)

    @get("/{session_id:str}/activities", summary="Activity records of a session", responses=problems(404))
    async def activities(
        self,
        session_id: FromPath[str],
        services: ServicesDep,
        principal: PrincipalDep,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> list[ActivityOut]:
        rows = await services.sessions.activities(principal, session_id, limit=limit, offset=offset)
        return [ActivityOut.of(r) for r in rows]

    @post(
        "/{session_id:str}/checkpoints",
        status_code=201,
        summary="Snapshot the workspace now",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def checkpoint(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> SnapshotOut:
        return SnapshotOut.of(await services.sessions.checkpoint(principal, session_id))

    @get(
        "/{session_id:str}/checkpoints",
        summary="The session's snapshots, oldest first, with diffs",
        responses=problems(404),
    )
    async def checkpoints(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> list[SnapshotOut]:
        row = await services.sessions.get(principal, session_id)
        rows = await services.snapshots.of_session(principal, row.id)
        return [SnapshotOut.of(r) for r in rows]

    @post(
        "/{session_id:str}/suspend",
        status_code=200,
        summary="Snapshot, then freeze the sandbox",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def suspend(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> SessionOut:
        return SessionOut.of(await services.sessions.suspend(principal, session_id))

    @post(
        "/{session_id:str}/resume",
        status_code=200,
        summary="Reattach to the sandbox, or hydrate a replacement from the last snapshot",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def resume(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> ResumeOut:
        row, how, snapshot_id = await services.sessions.resume(principal, session_id)
        return ResumeOut(session=SessionOut.of(row), how=how, snapshot_id=snapshot_id)  # type: ignore[arg-type]


class SessionWorkspaceController(Controller):
    """The live workspace as a tar; mounted with the snapshot-size body limit."""

    path = "/v1/sessions/{session_id:str}/workspace"
    tags = ["sessions"]

    @get(
        "/",
        summary="Download the workspace as it is now (a tar of workspace-relative paths)",
        media_type="application/x-tar",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def export_workspace(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> Stream:
        chunks = await services.sessions.export_workspace(principal, session_id)
        return Stream(chunks, media_type="application/x-tar")

    @put(
        "/",
        summary="Unpack a tar (raw body, any compression) over the workspace",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def import_workspace(
        self, session_id: FromPath[str], request: Request, services: ServicesDep, principal: PrincipalDep
    ) -> WorkspaceImported:
        body = Body(request)
        await services.sessions.import_workspace(principal, session_id, aiter(body))
        return WorkspaceImported(size=body.received)


class SessionStreamController(Controller):
    """Bytes in and out of a session as streams (a streamed activity call's argument, a file
    read out whole); mounted with the file-size limit."""

    path = "/v1/sessions/{session_id:str}"
    tags = ["sessions"]

    @post(
        "/features/{feature:str}/{activity:str}/stream",
        status_code=200,
        summary="Call an activity with one argument streamed: the body is the other arguments as "
        "JSON (?args_bytes= long), then the raw bytes (shell.exec: stdin; files.write: content)",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def call_streamed(
        self,
        session_id: FromPath[str],
        feature: FromPath[str],
        activity: FromPath[str],
        args_bytes: ArgsBytes,
        request: Request,
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> Any:
        args, upload = await split_body(request, args_bytes, services.settings.max_arguments_bytes)
        return await services.sessions.call(principal, session_id, feature, activity, args, upload)

    @get(
        "/files",
        summary="Read the file at ?path= in the session's workspace (raw, streamed)",
        media_type="application/octet-stream",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def read_file(
        self,
        session_id: FromPath[str],
        path: Annotated[str, QueryParameter(min_length=1, max_length=4096)],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> Stream:
        found = await services.sessions.read_file(principal, session_id, path)
        return Stream(
            found.chunks, media_type="application/octet-stream", headers={"Content-Length": str(found.size)}
        )
