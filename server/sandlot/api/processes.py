"""``/v1/sessions/{id}/processes``: background processes, their output from any byte offset,
a WebSocket that streams it live and resumes from an offset after a reconnect, and their stdin
(a pipe, or a terminal) for those started with one."""

from __future__ import annotations

from typing import Annotated

from litestar import Controller, Response, WebSocket, get, post, websocket
from litestar.params import FromPath, JSONBody, QueryParameter

from sandlot.api.deps import PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.api.process_schemas import ProcessInput, ProcessOut, ProcessStart
from sandlot.api.ws import Close, first_to_finish, refusal, until_disconnected
from sandlot.domain.errors import InvalidInput, SandlotError

__all__ = ["ProcessController"]

ByteOffset = Annotated[int, QueryParameter(ge=0, le=1 << 40)]
ByteLimit = Annotated[int, QueryParameter(ge=1, le=16 << 20)]


class ProcessController(Controller):
    path = "/v1/sessions/{session_id:str}/processes"
    tags = ["processes"]

    @post(
        "/",
        status_code=201,
        summary="Start a command detached",
        responses=problems(404, 409, 413, 502, 503, 507),
    )
    async def start(
        self,
        session_id: FromPath[str],
        data: JSONBody[ProcessStart],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> ProcessOut:
        row = await services.processes.start(
            principal, session_id, data.command, env=data.env, cwd=data.cwd, stdin=data.stdin, tty=data.tty
        )
        return ProcessOut.of(row)

    @get("/", summary="List the session's processes", responses=problems(404))
    async def list_processes(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> list[ProcessOut]:
        return [ProcessOut.of(r) for r in await services.processes.list(principal, session_id)]

    @get(
        "/{process_id:str}",
        summary="A process's status, exit code, duration, CPU time and peak memory",
        responses=problems(404),
    )
    async def get_process(
        self,
        session_id: FromPath[str],
        process_id: FromPath[str],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> ProcessOut:
        return ProcessOut.of(await services.processes.get(principal, session_id, process_id))

    @post(
        "/{process_id:str}/kill",
        status_code=200,
        summary="Kill the process and everything it started",
        responses=problems(404, 409, 502, 503),
    )
    async def kill(
        self,
        session_id: FromPath[str],
        process_id: FromPath[str],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> ProcessOut:
        return ProcessOut.of(await services.processes.kill(principal, session_id, process_id))

    @post(
        "/{process_id:str}/stdin",
        status_code=204,
        summary="Write to the process's stdin",
        description="For a process started with `stdin` or `tty`: `data` (UTF-8, at most 64 KiB "
        "encoded) goes to its stdin; `eof` then closes it. 409 when the process has no stdin, has "
        "ended, its stdin is closed, or it left its pipe full for 5 s (part of `data` may have "
        "gone in).",
        responses=problems(404, 409, 413, 502, 503),
    )
    async def stdin(
        self,
        session_id: FromPath[str],
        process_id: FromPath[str],
        data: JSONBody[ProcessInput],
        services: ServicesDep,
        principal: PrincipalDep,
    ) -> None:
        try:
            raw = data.data.encode()
        except UnicodeEncodeError as exc:  # a lone surrogate such as "\ud800"
            raise InvalidInput("stdin data is not valid Unicode", field="data") from exc
        await services.processes.write(principal, session_id, process_id, raw, eof=data.eof)

    @get(
        "/{process_id:str}/output",
        summary="Output bytes from an offset",
        description="Raw bytes (stdout and stderr merged). Headers: `Sandlot-Offset` (where these "
        "bytes start), `Sandlot-Next-Offset` (ask from there next), `Sandlot-Complete` (true once "
        "the process ended and nothing is left after these bytes).",
        media_type="application/octet-stream",
        responses=problems(404, 409, 502, 503),
    )
    async def output(
        self,
        session_id: FromPath[str],
        process_id: FromPath[str],
        services: ServicesDep,
        principal: PrincipalDep,
        offset: ByteOffset = 0,
        limit: ByteLimit = 1 << 20,
    ) -> Response[bytes]:
        data, row = await services.processes.read(principal, session_id, process_id, offset, limit)
        end = offset + len(data)
        complete = row.status != "running" and end >= row.output_bytes
        return Response(
            data,
            media_type="application/octet-stream",
            headers={
                "Sandlot-Offset": str(offset),
                "Sandlot-Next-Offset": str(end),
                "Sandlot-Complete": "true" if complete else "false",
            },
        )

    @websocket("/{process_id:str}/stream")
    async def stream(
        self,
        socket: WebSocket,
        session_id: FromPath[str],
        process_id: FromPath[str],
        services: ServicesDep,
        principal: PrincipalDep,
        offset: ByteOffset = 0,
    ) -> None:
        """Binary frames carry the output from ``offset`` on, in order; a client that keeps count
        of the bytes it received reconnects with ``?offset=<count>``. When the process has ended
        and everything was sent, a text frame ``{"type": "exit", ...}`` with its status and the
        final offset closes the stream."""
        # check access before the handshake completes: a stranger gets no stream at all
        await services.processes.check(principal, session_id, process_id)
        await socket.accept()

        async def pump() -> Close:
            sent = offset
            try:
                async for chunk in services.processes.follow(principal, session_id, process_id, offset):
                    await socket.send_bytes(chunk)
                    sent += len(chunk)
                row = await services.processes.get(principal, session_id, process_id)
                end = {"type": "exit", "status": row.status, "exit_code": row.exit_code, "offset": sent}
                await socket.send_json(end)
                return Close()
            except SandlotError as exc:
                await socket.send_json({"type": "error", "code": exc.code, "message": exc.message})
                return refusal(exc)

        await first_to_finish(socket, pump(), until_disconnected(socket))
