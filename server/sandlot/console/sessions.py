"""The console's sessions: a list (ended and suspended ones stay), and a session's page with its
activities, a live terminal (xterm.js over the PTY WebSocket, opened with a one-minute token the
page asks for) and a file browser of the workspace (list, download, upload)."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Annotated, Any
from urllib.parse import quote

from litestar import Controller, Request, Response, get, post
from litestar.params import FromPath, QueryParameter
from litestar.response import Stream, Template

from sandlot.api.deps import ServicesDep
from sandlot.console.auth import User
from sandlot.console.forms import reported
from sandlot.domain.errors import InvalidInput, NotFound, SandlotError
from sandlot.domain.status import SESSION_ACTIVE

__all__ = ["SessionsController"]

Path = Annotated[str, QueryParameter(min_length=1, max_length=4096)]
#: Uploads through the console: at most this many bytes (the API's file routes take more).
UPLOAD_LIMIT = 8 << 20
#: How much of a process's output the page shows (its end).
OUTPUT_TAIL = 64 << 10


def _trace_link(template: str, session_id: str) -> str | None:
    """The trace viewer's page for this session, when one is configured (the id is quoted)."""
    return template.replace("{session_id}", quote(session_id, safe="")) if template else None


class SessionsController(Controller):
    path = "/sessions"

    @get("/", name="console-sessions")
    async def page(self, services: ServicesDep, user: User) -> Template:
        rows = await services.sessions.list(user, statuses=None, limit=100, offset=0)
        return Template("console/sessions.html", context={"user": user, "page": "sessions", "rows": rows})

    @get("/{session_id:str}", name="console-session")
    async def detail(self, session_id: FromPath[str], services: ServicesDep, user: User) -> Template:
        row = await services.sessions.get(user, session_id)
        activities = await services.sessions.activities(user, row.id, limit=50, offset=0)
        checkpoints = await services.snapshots.of_session(user, row.id)
        live = row.status == SESSION_ACTIVE
        context = {
            "user": user,
            "page": "sessions",
            "s": row,
            "activities": activities,
            "checkpoints": checkpoints,
            "live": live,
            "traces": _trace_link(services.settings.console_trace_url, row.id),
        }
        return Template("console/session.html", context=context)

    @get("/{session_id:str}/checkpoints/{snapshot_id:str}/archive")
    async def checkpoint_archive(
        self, session_id: FromPath[str], snapshot_id: FromPath[str], services: ServicesDep, user: User
    ) -> Stream:
        """A checkpoint's workspace as a tar (streamed from the blob store)."""
        snap = await services.snapshots.get(user, snapshot_id)
        if snap.session_id != (await services.sessions.get(user, session_id)).id:
            raise NotFound(f"no snapshot {snapshot_id} in session {session_id}")
        chunks = await services.snapshots.archive(user, snap.id)
        disposition = f'attachment; filename="{snap.id}.tar"'
        return Stream(chunks, media_type="application/x-tar", headers={"Content-Disposition": disposition})

    @get("/{session_id:str}/processes")
    async def processes(self, session_id: FromPath[str], services: ServicesDep, user: User) -> Template:
        """The session's background processes (their state read from the sandbox). Once the
        session cannot list them (it ended meanwhile), the fragment says so and answers 286,
        which stops htmx polling it."""
        rows: Sequence[Any] = []
        with reported() as done:
            rows = await services.processes.list(user, session_id)
        context = {"s_id": session_id, "rows": rows, "error": done.error}
        return Template("console/_processes.html", context=context, status_code=286 if done.error else 200)

    @get("/{session_id:str}/processes/{process_id:str}/output")
    async def process_output(
        self, session_id: FromPath[str], process_id: FromPath[str], services: ServicesDep, user: User
    ) -> Template:
        """The last ``OUTPUT_TAIL`` bytes a process wrote (the page polls this while it runs)."""
        row = await services.processes.get(user, session_id, process_id)
        start = max(0, row.output_bytes - OUTPUT_TAIL)
        data, row = await services.processes.read(user, session_id, process_id, start, OUTPUT_TAIL)
        context = {"s_id": session_id, "p": row, "text": data.decode("utf-8", "replace"), "cut": start > 0}
        return Template("console/_process_output.html", context=context)

    @post("/{session_id:str}/terminal", status_code=200)
    async def terminal(self, session_id: FromPath[str], services: ServicesDep, user: User) -> dict[str, str]:
        """Where the page's terminal connects: the PTY WebSocket with a one-minute token."""
        row = await services.sessions.get(user, session_id)
        token, _ = await services.terminals.token(user, row.id, session=True)
        return {"path": f"/v1/sessions/{row.id}/pty?token={token}"}

    @get("/{session_id:str}/files")
    async def files(
        self, session_id: FromPath[str], services: ServicesDep, user: User, path: Path = "."
    ) -> Template:
        await services.sessions.get(user, session_id)  # another tenant's: 404, not a message
        context: dict[str, Any] = {"s_id": session_id, "path": path, "entries": [], "error": None}
        try:
            listed = await services.sessions.call(user, session_id, "files", "list", {"path": path})
            context["entries"] = listed["entries"]
        except SandlotError as exc:
            context["error"] = exc.message
        return Template("console/_files.html", context=context)

    @get("/{session_id:str}/files/download")
    async def download(
        self, session_id: FromPath[str], services: ServicesDep, user: User, path: Path
    ) -> Response[bytes]:
        read = await services.sessions.call(
            user, session_id, "files", "read", {"path": path, "encoding": "base64"}
        )
        name = path.rstrip("/").rsplit("/", 1)[-1] or "file"
        return Response(
            base64.b64decode(read["content"]),
            media_type="application/octet-stream",
            headers={"Content-Disposition": _attachment(name)},
        )

    @post("/{session_id:str}/files", status_code=200)
    async def upload(
        self, session_id: FromPath[str], request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Template:
        await services.sessions.get(user, session_id)  # another tenant's: 404, not a message
        form = await request.form()
        folder = str(form.get("path") or ".")
        upload = form.get("file")
        context: dict[str, Any] = {"s_id": session_id, "path": folder, "entries": [], "error": None}
        try:
            if upload is None or isinstance(upload, str) or not upload.filename:
                raise InvalidInput("choose a file to upload", field="file")
            data = await upload.read(UPLOAD_LIMIT + 1)
            if len(data) > UPLOAD_LIMIT:
                raise InvalidInput(f"the console uploads at most {UPLOAD_LIMIT >> 20} MiB", field="file")
            target = f"{folder.rstrip('/')}/{upload.filename.rsplit('/', 1)[-1]}"
            args = {"path": target, "content": base64.b64encode(data).decode(), "encoding": "base64"}
            await services.sessions.call(user, session_id, "files", "write", args)
            listed = await services.sessions.call(user, session_id, "files", "list", {"path": folder})
            context["entries"] = listed["entries"]
        except SandlotError as exc:
            context["error"] = exc.message
        return Template("console/_files.html", context=context)


def _attachment(name: str) -> str:
    """A ``Content-Disposition`` for a download named ``name``, which a tenant chose: any
    character at all (CR and LF among them, which made the header a 500). An ASCII stand-in in
    ``filename`` and the name itself percent-encoded in ``filename*`` (RFC 6266)."""
    plain = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in name)
    encoded = quote(name.encode(errors="replace"), safe="")
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{encoded}"
