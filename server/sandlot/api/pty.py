"""Interactive terminals over WebSockets: ``/v1/sessions/{id}/pty`` and
``/v1/sandboxes/{id}/pty``.

A real PTY in the sandbox runs ``/bin/sh``. Client frames: binary frames are keystrokes;
text frames are JSON: ``{"type": "stdin", "data": "..."}``, ``{"type": "resize", "cols": 120,
"rows": 40}``, ``{"type": "signal", "signal": "INT" | "QUIT" | "TSTP"}`` (sent as the terminal's
control character), ``{"type": "ping"}``. Server frames: binary frames are terminal output;
text frames are JSON: ``{"type": "heartbeat"}`` every ``HEARTBEAT_SECONDS``, ``{"type":
"pong"}``, ``{"type": "exit"}`` when the shell ends, ``{"type": "error", "code":
"invalid_input", "message": ...}`` for a control frame it cannot use (the terminal goes on).
A frame over ``MAX_FRAME_BYTES`` closes the socket with 1009 (see ``api/ws.py``).

Authentication: the ``Authorization`` header, or (browsers) ``?token=`` from
``POST .../pty/token``, valid for one minute, for that terminal only and once. The output pump
waits for each frame to be sent before it reads more, so a slow client slows the terminal
instead of growing the server's memory.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated

from litestar import Controller, WebSocket, post, websocket
from litestar.datastructures import Headers
from litestar.params import FromPath, QueryParameter
from pydantic import BaseModel

from sandlot.api.deps import PrincipalDep, ServicesDep, admit
from sandlot.api.problems import problems
from sandlot.api.ws import Close, first_to_finish, receive_frame, refusal
from sandlot.domain.errors import SandlotError
from sandlot.runtime.base import PtyStream
from sandlot.services.accounts import Principal
from sandlot.services.terminals import TerminalService

__all__ = ["HEARTBEAT_SECONDS", "PtyController"]

HEARTBEAT_SECONDS = 15.0
_TOKEN_SUMMARY = "A one-minute token to open the PTY without headers (browsers)"
_CONTROL = {"INT": b"\x03", "QUIT": b"\x1c", "TSTP": b"\x1a", "EOF": b"\x04"}

Cols = Annotated[int, QueryParameter(ge=2, le=1000)]
Rows = Annotated[int, QueryParameter(ge=2, le=1000)]
Token = Annotated[str | None, QueryParameter(max_length=300)]
Size = tuple[int, int]  # cols, rows


class PtyToken(BaseModel):
    token: str
    expires_at: int
    path: str


async def _serve(
    socket: WebSocket,
    terminals: TerminalService,
    principal: Principal,
    target: str,
    *,
    session: bool,
    size: Size,
) -> None:
    await terminals.ref(principal, target, session=session)  # a refusal as an HTTP error
    await socket.accept()
    try:
        term = await terminals.open(principal, target, session=session, cols=size[0], rows=size[1])
    except SandlotError as exc:
        await socket.send_json({"type": "error", "code": exc.code, "message": exc.message})
        closing = refusal(exc)
        await socket.close(code=closing.code, reason=closing.reason)
        return

    async def output() -> Close:
        while (data := await term.read()) is not None:
            await socket.send_bytes(data)
        await socket.send_json({"type": "exit"})
        return Close()

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            await socket.send_json({"type": "heartbeat"})

    try:
        await first_to_finish(socket, output(), _input(socket, term), heartbeat())
    finally:
        await term.close()


async def _input(socket: WebSocket, term: PtyStream) -> Close | None:
    while (frame := await receive_frame(socket)) is not None:
        if isinstance(frame, bytes):
            if frame:
                await term.write(frame)
            continue
        problem = await _control(socket, term, frame)
        if problem:
            await socket.send_json({"type": "error", "code": "invalid_input", "message": problem})
    return None


async def _control(socket: WebSocket, term: PtyStream, text: str) -> str | None:
    """Act on one JSON control frame; what is wrong with it, if anything."""
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, digits past int's limit, nested too deep
        frame = None
    if not isinstance(frame, dict):
        return "text frames are JSON objects"
    kind = frame.get("type")
    if kind == "stdin" and isinstance(frame.get("data"), str):
        try:
            await term.write(frame["data"].encode())
        except UnicodeEncodeError:  # a lone surrogate such as "\ud800"
            return "stdin data is not valid Unicode"
    elif kind == "resize":
        cols, rows = frame.get("cols"), frame.get("rows")
        if not (_size(cols) and _size(rows)):
            return "bad size: cols and rows are integers from 2 to 1000"
        await term.resize(cols, rows)  # type: ignore[arg-type]  # checked by _size
    elif kind == "signal" and frame.get("signal") in _CONTROL:
        await term.write(_CONTROL[frame["signal"]])
    elif kind == "ping":
        await socket.send_json({"type": "pong"})
    else:
        shown = kind if isinstance(kind, str) else type(kind).__name__
        return f"unknown frame {shown[:40]!r}"
    return None


def _size(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 2 <= value <= 1000


class PtyController(Controller):
    tags = ["terminals"]

    @post(
        "/v1/sessions/{session_id:str}/pty/token",
        status_code=201,
        summary="A one-minute token for the PTY",
        responses=problems(404, 409),
    )
    async def session_token(
        self, session_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> PtyToken:
        token, expiry = await services.terminals.token(principal, session_id, session=True)
        return PtyToken(token=token, expires_at=expiry, path=f"/v1/sessions/{session_id}/pty?token={token}")

    @websocket("/v1/sessions/{session_id:str}/pty")
    async def session_pty(
        self,
        socket: WebSocket,
        session_id: FromPath[str],
        services: ServicesDep,
        headers: Headers,
        token: Token = None,
        cols: Cols = 80,
        rows: Rows = 24,
    ) -> None:
        terminals = services.terminals
        principal = await admit(
            services, terminals.caller(headers.get("authorization"), token, session_id), socket.scope
        )
        await _serve(socket, terminals, principal, session_id, session=True, size=(cols, rows))

    @post(
        "/v1/sandboxes/{sandbox_id:str}/pty/token",
        status_code=201,
        summary="A one-minute token for the PTY",
        responses=problems(404, 409),
    )
    async def sandbox_token(
        self, sandbox_id: FromPath[str], services: ServicesDep, principal: PrincipalDep
    ) -> PtyToken:
        token, expiry = await services.terminals.token(principal, sandbox_id, session=False)
        return PtyToken(token=token, expires_at=expiry, path=f"/v1/sandboxes/{sandbox_id}/pty?token={token}")

    @websocket("/v1/sandboxes/{sandbox_id:str}/pty")
    async def sandbox_pty(
        self,
        socket: WebSocket,
        sandbox_id: FromPath[str],
        services: ServicesDep,
        headers: Headers,
        token: Token = None,
        cols: Cols = 80,
        rows: Rows = 24,
    ) -> None:
        terminals = services.terminals
        principal = await admit(
            services, terminals.caller(headers.get("authorization"), token, sandbox_id), socket.scope
        )
        await _serve(socket, terminals, principal, sandbox_id, session=False, size=(cols, rows))
