"""The async client: :class:`AsyncSandlot` and the session objects it hands out.

Transport is the generated low-level client (:mod:`sandlot_client._api`, from the service's
OpenAPI document); this layer adds sessions as context managers, typed exceptions, retries with
backoff for retryable errors, resumable output streams and terminals over WebSockets, and a
session state that serialises to JSON and back.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import httpx
import websockets
from websockets.exceptions import ConnectionClosed

from sandlot_client._api.client import AuthenticatedClient
from sandlot_client.errors import SandlotError, TransportError, from_problem

__all__ = ["AsyncProcess", "AsyncPty", "AsyncSandlot", "AsyncSession", "output_bytes"]

_IDEMPOTENT = {"GET", "PUT", "DELETE", "HEAD"}


class AsyncSandlot:
    """``AsyncSandlot(base_url, api_key)``; use as ``async with`` or call :meth:`close`.

    Retryable failures (503 ``no_capacity`` honouring ``Retry-After``, ``runtime_unavailable``,
    connections refused, and resets on idempotent requests) are retried up to ``max_retries``
    times with exponential backoff; every other error is raised at once as a typed exception.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 0.5,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.max_retries = max_retries
        self.backoff = backoff
        self._api = AuthenticatedClient(
            base_url=self.base_url,
            token=api_key,
            timeout=httpx.Timeout(timeout),
            raise_on_unexpected_status=False,
        )
        self._http = self._api.get_async_httpx_client()

    async def __aenter__(self) -> AsyncSandlot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    # -- transport ---------------------------------------------------------------------------

    async def request(self, method: str, path: str, *, json_body: Any = None, **kw: Any) -> httpx.Response:
        """One API call with the retry policy; a problem answer raises its typed exception."""
        attempt = 0
        while True:
            try:
                resp = await self._http.request(method, path, json=json_body, **kw)
            except httpx.ConnectError as exc:
                error: SandlotError = TransportError(f"could not connect: {exc}")
            except (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError) as exc:
                if method not in _IDEMPOTENT:
                    raise TransportError(f"connection lost during {method} {path}: {exc}") from exc
                error = TransportError(f"connection lost: {exc}")
            else:
                if resp.status_code < 400:
                    return resp
                try:
                    body = resp.json()
                except ValueError:
                    body = {"detail": resp.text[:500]}
                error = from_problem(resp.status_code, body, resp.headers.get("retry-after"))
            if not error.retryable or attempt >= self.max_retries:
                raise error
            attempt += 1
            delay = self.backoff * 2 ** (attempt - 1) * (0.8 + 0.4 * random.random())
            retry_after = error.body.get("retry_after_header")
            if retry_after:
                delay = max(delay, float(retry_after))
            await asyncio.sleep(delay)

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        resp = await self.request(method, path, json_body=body)
        return resp.json() if resp.content else None

    def ws_url(self, path: str) -> str:
        return "ws" + self.base_url.removeprefix("http") + path

    # -- environments and sessions -------------------------------------------------------------

    async def create_environment(self, name: str, images: list[str], **fields: Any) -> dict[str, Any]:
        return dict(await self.call("POST", "/v1/environments", {"name": name, "images": images, **fields}))

    async def start_session(
        self,
        environment: str,
        *,
        image: str | None = None,
        feature: str | None = None,
        session_id: str | None = None,
        snapshot_id: str | None = None,
        assets: list[dict[str, str]] | None = None,
        files: dict[str, str] | None = None,
    ) -> AsyncSession:
        body: dict[str, Any] = {"environment": environment}
        for key, value in (
            ("image", image),
            ("feature", feature),
            ("session_id", session_id),
            ("snapshot_id", snapshot_id),
            ("assets", assets),
        ):
            if value is not None:
                body[key] = value
        if files:
            body["manifest"] = [{"path": p, "content": c} for p, c in files.items()]
        return AsyncSession(self, await self.call("POST", "/v1/sessions", body))

    def session(self, environment: str, **kw: Any) -> _SessionContext:
        """``async with client.session(environment="py") as s:`` ends the session on exit."""
        return _SessionContext(self, environment, kw)

    async def resume(self, state: dict[str, Any] | str) -> AsyncSession:
        """Resume from :meth:`AsyncSession.state` (a dict or its JSON): reattach to the same
        sandbox when it is alive, otherwise the service hydrates a replacement."""
        data = json.loads(state) if isinstance(state, str) else state
        body = await self.call("POST", f"/v1/sessions/{data['session_id']}/resume")
        session = AsyncSession(self, body["session"])
        session.resumed_how = body["how"]
        return session


class _SessionContext:
    def __init__(self, client: AsyncSandlot, environment: str, kw: dict[str, Any]) -> None:
        self._client, self._environment, self._kw = client, environment, kw
        self._session: AsyncSession | None = None

    async def __aenter__(self) -> AsyncSession:
        self._session = await self._client.start_session(self._environment, **self._kw)
        return self._session

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None and self._session.status in ("active", "suspended"):
            await self._session.end()


class AsyncSession:
    """One session. ``shell``, ``files``, ``python`` call the features; ``processes`` runs
    commands in the background; :meth:`state` is everything needed to resume it."""

    def __init__(self, client: AsyncSandlot, data: dict[str, Any]) -> None:
        self._client = client
        self.data = data
        self.resumed_how: str | None = None
        self.shell = _Shell(self)
        self.files = _Files(self)
        self.python = _Python(self)
        self.processes = _Processes(self)

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def status(self) -> str:
        return str(self.data.get("status", ""))

    @property
    def sandbox_id(self) -> str | None:
        return self.data.get("sandbox_id")

    def state(self) -> dict[str, Any]:
        """The session's resume state (JSON-serialisable)."""
        return {**self.data.get("state", {}), "session_id": self.id, "base_url": self._client.base_url}

    def state_json(self) -> str:
        return json.dumps(self.state(), sort_keys=True)

    async def activity(self, feature: str, name: str, **args: Any) -> dict[str, Any]:
        path = f"/v1/sessions/{self.id}/features/{feature}/{name}"
        return dict(await self._client.call("POST", path, args))

    async def refresh(self) -> AsyncSession:
        self.data = await self._client.call("GET", f"/v1/sessions/{self.id}")
        return self

    async def checkpoint(self) -> dict[str, Any]:
        return dict(await self._client.call("POST", f"/v1/sessions/{self.id}/checkpoints"))

    async def checkpoints(self) -> list[dict[str, Any]]:
        return list(await self._client.call("GET", f"/v1/sessions/{self.id}/checkpoints"))

    async def download(self, snapshot_id: str) -> bytes:
        return (await self._client.request("GET", f"/v1/snapshots/{snapshot_id}/archive")).content

    async def export_workspace(self) -> bytes:
        """The workspace as it is now: a tar of workspace-relative paths (nothing is stored)."""
        return (await self._client.request("GET", f"/v1/sessions/{self.id}/workspace")).content

    async def import_workspace(self, archive: bytes) -> dict[str, Any]:
        """Unpack a tar (any compression) over the workspace; its files replace those there."""
        resp = await self._client.request(
            "PUT",
            f"/v1/sessions/{self.id}/workspace",
            content=archive,
            headers={"content-type": "application/x-tar"},
        )
        return dict(resp.json())

    async def suspend(self) -> dict[str, Any]:
        self.data = await self._client.call("POST", f"/v1/sessions/{self.id}/suspend")
        return self.state()

    async def resume(self) -> str:
        body = await self._client.call("POST", f"/v1/sessions/{self.id}/resume")
        self.data = body["session"]
        self.resumed_how = body["how"]
        return str(body["how"])

    async def activities(self) -> list[dict[str, Any]]:
        return list(await self._client.call("GET", f"/v1/sessions/{self.id}/activities"))

    async def end(self) -> None:
        await self._client.request("DELETE", f"/v1/sessions/{self.id}")
        self.data = {**self.data, "status": "ended"}

    async def pty(self, cols: int = 80, rows: int = 24) -> AsyncPty:
        url = self._client.ws_url(f"/v1/sessions/{self.id}/pty?cols={cols}&rows={rows}")
        headers = {"Authorization": f"Bearer {self._client.api_key}"}
        return AsyncPty(await websockets.connect(url, additional_headers=headers, max_size=None))


class _Shell:
    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def run(
        self, command: str, *, timeout: float = 60, silence_timeout: float | None = None
    ) -> dict[str, Any]:
        args: dict[str, Any] = {"command": command, "timeout": timeout}
        if silence_timeout is not None:
            args["silence_timeout"] = silence_timeout
        return await self._s.activity("shell", "run", **args)

    async def exec(
        self,
        argv: list[str],
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 60,
    ) -> dict[str, Any]:
        """Run ``argv`` once in a fresh process (no shell state; several may run at once), in
        ``cwd`` (default: the workspace). ``stdout``/``stderr`` are base64 when ``encoding``
        says so (output that is not UTF-8); :func:`output_bytes` decodes either way."""
        args: dict[str, Any] = {"argv": argv, "timeout": timeout, "env": env or {}}
        if cwd is not None:
            args["cwd"] = cwd
        if isinstance(stdin, bytes):
            args["stdin"], args["stdin_encoding"] = base64.b64encode(stdin).decode(), "base64"
        elif stdin is not None:
            args["stdin"] = stdin
        return await self._s.activity("shell", "exec", **args)


def output_bytes(result: dict[str, Any]) -> tuple[bytes, bytes]:
    """The exact ``(stdout, stderr)`` bytes of a ``shell.run`` or ``shell.exec`` result."""
    if result.get("encoding") == "base64":
        return base64.b64decode(result["stdout"]), base64.b64decode(result["stderr"])
    return str(result["stdout"]).encode(), str(result["stderr"]).encode()


class _Files:
    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def write(self, path: str, content: str | bytes) -> dict[str, Any]:
        if isinstance(content, bytes):
            return await self._s.activity(
                "files", "write", path=path, content=base64.b64encode(content).decode(), encoding="base64"
            )
        return await self._s.activity("files", "write", path=path, content=content)

    async def read(self, path: str) -> bytes:
        out = await self._s.activity("files", "read", path=path, encoding="base64")
        return base64.b64decode(out["content"])

    async def list(self, path: str = ".") -> dict[str, Any]:
        return await self._s.activity("files", "list", path=path)

    async def remove(self, path: str) -> dict[str, Any]:
        return await self._s.activity("files", "remove", path=path)


class _Python:
    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def run(self, code: str, *, timeout: float = 60) -> dict[str, Any]:
        return await self._s.activity("python", "run", code=code, timeout=timeout)


class _Processes:
    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def start(
        self, command: str, *, env: dict[str, str] | None = None, cwd: str | None = None
    ) -> AsyncProcess:
        body: dict[str, Any] = {"command": command, "env": env or {}}
        if cwd is not None:
            body["cwd"] = cwd
        data = await self._s._client.call("POST", f"/v1/sessions/{self._s.id}/processes", body)
        return AsyncProcess(self._s, data)

    async def list(self) -> list[dict[str, Any]]:
        return list(await self._s._client.call("GET", f"/v1/sessions/{self._s.id}/processes"))


class AsyncProcess:
    def __init__(self, session: AsyncSession, data: dict[str, Any]) -> None:
        self._s = session
        self.data = data

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def _path(self) -> str:
        return f"/v1/sessions/{self._s.id}/processes/{self.id}"

    async def status(self) -> dict[str, Any]:
        self.data = await self._s._client.call("GET", self._path)
        return self.data

    async def wait(self, poll: float = 0.2) -> dict[str, Any]:
        """Poll until the process has ended; returns its final status."""
        while True:
            data = await self.status()
            if data["status"] != "running":
                return data
            await asyncio.sleep(poll)

    async def kill(self) -> dict[str, Any]:
        self.data = await self._s._client.call("POST", f"{self._path}/kill")
        return self.data

    async def output(self, offset: int = 0, limit: int = 1 << 20) -> bytes:
        resp = await self._s._client.request(
            "GET", f"{self._path}/output", params={"offset": offset, "limit": limit}
        )
        return resp.content

    def stream(self, offset: int = 0, *, reconnect: bool = True, max_reconnects: int = 20) -> OutputStream:
        """Output from ``offset`` as it is written. A dropped connection is resumed from the
        bytes already received (``reconnect``), so nothing is lost or repeated."""
        return OutputStream(self, offset, reconnect, max_reconnects)


class OutputStream:
    """An async iterator of output chunks; ``offset`` is how many bytes were received;
    ``exit`` is the final status frame once the stream ended."""

    def __init__(self, process: AsyncProcess, offset: int, reconnect: bool, max_reconnects: int) -> None:
        self._p = process
        self.offset = offset
        self.reconnects = 0
        self.exit: dict[str, Any] | None = None
        self._reconnect = reconnect
        self._max = max_reconnects
        self._conn: Any = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def drop(self) -> None:
        """Close the current connection (as a network failure would); iteration resumes."""
        if self._conn is not None:
            await self._conn.close()

    async def _chunks(self) -> AsyncIterator[bytes]:
        client = self._p._s._client
        headers = {"Authorization": f"Bearer {client.api_key}"}
        while self.exit is None:
            url = client.ws_url(f"{self._p._path}/stream?offset={self.offset}")
            try:
                async with websockets.connect(url, additional_headers=headers, max_size=None) as conn:
                    self._conn = conn
                    async for message in conn:
                        if isinstance(message, str):
                            frame = json.loads(message)
                            if frame.get("type") == "error":
                                raise SandlotError(
                                    frame.get("message", "stream error"), code=frame.get("code", "error")
                                )
                            self.exit = frame
                            break
                        self.offset += len(message)
                        yield message
            except (ConnectionClosed, OSError) as exc:
                if not self._reconnect or self.reconnects >= self._max:
                    raise TransportError(f"output stream lost: {exc}") from exc
            finally:
                self._conn = None
            if self.exit is None:
                if not self._reconnect or self.reconnects >= self._max:
                    raise TransportError("output stream ended early")
                self.reconnects += 1


class AsyncPty:
    """A terminal: ``send`` keystrokes, ``resize``, ``signal``, ``recv`` output (None at exit)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def send(self, data: str | bytes) -> None:
        await self._conn.send(data.encode() if isinstance(data, str) else data)

    async def resize(self, cols: int, rows: int) -> None:
        await self._conn.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))

    async def signal(self, name: str = "INT") -> None:
        await self._conn.send(json.dumps({"type": "signal", "signal": name}))

    async def recv(self) -> bytes | None:
        while True:
            try:
                message = await self._conn.recv()
            except ConnectionClosed:
                return None
            if isinstance(message, bytes):
                return message
            if json.loads(message).get("type") == "exit":
                return None

    async def read_until(self, needle: bytes, timeout: float = 30) -> bytes:
        seen = b""
        async with asyncio.timeout(timeout):
            while needle not in seen:
                chunk = await self.recv()
                if chunk is None:
                    break
                seen += chunk
        return seen

    async def close(self) -> None:
        await self._conn.close()
