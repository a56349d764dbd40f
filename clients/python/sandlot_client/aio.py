"""The async client: :class:`AsyncSandlot` and the session objects it hands out.

Transport is the generated low-level client (:mod:`sandlot_client._api`, from the service's
OpenAPI document): every REST request here is built by the generated function of its route, with
bodies from the generated models (:mod:`sandlot_client._bodies`), so the two cannot
drift. This layer adds sessions as context managers, typed exceptions, retries with backoff for
retryable errors (:mod:`sandlot_client._transport`), resumable output streams and terminals over
WebSockets (:mod:`sandlot_client._streams`), and a session state that serialises to JSON and
back. Features and processes live in :mod:`sandlot_client._features` and
:mod:`sandlot_client._processes`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import httpx

from sandlot_client import _bodies
from sandlot_client._api.api.environments import v1_environments_create as create_environment_route
from sandlot_client._api.api.environments import v1_environments_get_environment as get_environment_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_activities_activities as activities_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_checkpoints_checkpoint as checkpoint_route
from sandlot_client._api.api.sessions import (
    v1_sessions_session_id_checkpoints_checkpoints as checkpoints_route,
)
from sandlot_client._api.api.sessions import v1_sessions_session_id_end as end_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_features_activity_call as activity_route
from sandlot_client._api.api.sessions import (
    v1_sessions_session_id_features_activity_stream_call_streamed as streamed_route,
)
from sandlot_client._api.api.sessions import v1_sessions_session_id_files_read_file as read_file_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_get_session as get_session_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_resume_resume as resume_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_suspend_suspend as suspend_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_workspace_export_workspace as export_route
from sandlot_client._api.api.sessions import v1_sessions_session_id_workspace_import_workspace as import_route
from sandlot_client._api.api.sessions import v1_sessions_start as start_session_route
from sandlot_client._api.api.snapshots import v1_snapshots_snapshot_id_archive_archive as archive_route
from sandlot_client._api.client import AuthenticatedClient
from sandlot_client._api.types import UNSET, Response
from sandlot_client._features import Files, Python, Shell, output_bytes
from sandlot_client._processes import AsyncProcess, Processes
from sandlot_client._streams import AsyncPty, OutputStream, connect
from sandlot_client._transport import Answer, send
from sandlot_client.errors import TransportError

__all__ = [
    "AsyncProcess",
    "AsyncPty",
    "AsyncSandlot",
    "AsyncSession",
    "FileDownload",
    "OutputStream",
    "output_bytes",
]

A = TypeVar("A", bound=Answer)

Endpoint = Callable[[], dict[str, Any]]
"""A generated route's ``_get_kwargs`` with its arguments bound: the method, path (parameters
quoted) and body of the request, checked by mypy against the route. The answer is not parsed
into the generated models: the SDK returns the JSON as the service sent it, and an answer the
models do not expect (a newer or older service, a proxy's status) must still give a typed
error, not a ``KeyError`` or ``ValueError`` from the parser."""


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
        self._base_path = httpx.URL(self.base_url).raw_path.decode("ascii").rstrip("/")

    async def __aenter__(self) -> AsyncSandlot:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._http.aclose()

    # -- transport ---------------------------------------------------------------------------

    async def request(self, method: str, path: str, *, json_body: Any = None, **kw: Any) -> httpx.Response:
        """One API call by method and path, with the retry policy; a problem answer raises its
        typed exception. For routes this client has no method for; its own methods call the
        generated route functions."""
        return await self._send(lambda: self._http.request(method, path, json=json_body, **kw))

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        """:meth:`request`, answering the decoded JSON body (None when empty)."""
        return _json(await self.request(method, path, json_body=body))

    def ws_url(self, path: str) -> str:
        return "ws" + self.base_url.removeprefix("http") + path

    async def _send(self, attempt: Callable[[], Awaitable[A]]) -> A:
        return await send(
            attempt, max_retries=self.max_retries, backoff=self.backoff, base_path=self._base_path
        )

    async def _rest(self, endpoint: Endpoint) -> httpx.Response:
        """Send a generated route's request (see :data:`Endpoint`) with the retry policy."""
        return await self._send(lambda: self._http.request(**endpoint()))

    async def _rest_json(self, endpoint: Endpoint) -> Any:
        """:meth:`_rest`, answering the JSON body as the service sent it (None when empty)."""
        return _json(await self._rest(endpoint))

    # -- environments and sessions -------------------------------------------------------------

    async def create_environment(self, name: str, images: list[str], **fields: Any) -> dict[str, Any]:
        body = _bodies.environment_create(name, images, fields)
        return dict(await self._rest_json(partial(create_environment_route._get_kwargs, body=body)))

    async def _get_environment(self, name: str) -> dict[str, Any]:
        """The environment ``name`` (for the adapters, which check it exists before starting)."""
        return dict(await self._rest_json(partial(get_environment_route._get_kwargs, name)))

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
        body = _bodies.session_create(
            environment,
            image=image,
            feature=feature,
            session_id=session_id,
            snapshot_id=snapshot_id,
            assets=assets,
            files=files,
        )
        data = await self._rest_json(partial(start_session_route._get_kwargs, body=body))
        return AsyncSession(self, data)

    def session(self, environment: str, **kw: Any) -> _SessionContext:
        """``async with client.session(environment="py") as s:`` ends the session on exit."""
        return _SessionContext(self, environment, kw)

    async def resume(self, state: dict[str, Any] | str) -> AsyncSession:
        """Resume from :meth:`AsyncSession.state` (a dict or its JSON): reattach to the same
        sandbox when it is alive, otherwise the service hydrates a replacement."""
        data = json.loads(state) if isinstance(state, str) else state
        body = await self._rest_json(partial(resume_route._get_kwargs, data["session_id"]))
        session = AsyncSession(self, body["session"])
        session.resumed_how = body["how"]
        return session


def _json(answer: httpx.Response | Response[Any]) -> Any:
    return json.loads(answer.content) if answer.content else None


@dataclass(frozen=True)
class FileDownload:
    """A file being read out of a session: its ``size`` (-1 when not said), then its bytes."""

    size: int
    _response: httpx.Response

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_bytes():
                yield chunk
        except httpx.TransportError as exc:
            raise TransportError(f"connection lost while reading a file: {exc}") from exc


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
        self.shell = Shell(self)
        self.files = Files(self)
        self.python = Python(self)
        self.processes = Processes(self)

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

    async def _json(self, endpoint: Endpoint) -> Any:
        """The JSON answer of a generated route's request (for this session's routes)."""
        return await self._client._rest_json(endpoint)

    async def activity(self, feature: str, name: str, **args: Any) -> dict[str, Any]:
        body = _bodies.activity_args(args)
        endpoint = partial(activity_route._get_kwargs, self.id, feature, name, body=body)
        return dict(await self._json(endpoint))

    async def activity_streamed(self, feature: str, name: str, data: bytes, **args: Any) -> dict[str, Any]:
        """Call an activity with its streamed argument (``shell.exec``'s stdin, ``files.write``'s
        content) as raw bytes after the JSON arguments, in one body: any size up to the
        service's file limit, where a JSON body holds about a megabyte."""
        head = json.dumps(args).encode()
        route = streamed_route._get_kwargs(self.id, feature, name, args_bytes=len(head))
        route["content"] = head + data  # bytes, not a stream: a retried request sends it again
        route["headers"] = {"content-type": "application/octet-stream"}
        return dict(_json(await self._client._send(lambda: self._client._http.request(**route))))

    @contextlib.asynccontextmanager
    async def open_file(self, path: str) -> AsyncIterator[FileDownload]:
        """``async with session.open_file(path) as f``: the workspace file at ``path`` as it
        streams (``f.size`` first, then ``f.chunks()``), any size up to the file limit."""
        http = self._client._http
        request = http.build_request(**read_file_route._get_kwargs(self.id, path=path))

        async def attempt() -> httpx.Response:
            response = await http.send(request, stream=True)
            if response.status_code >= 400:  # read, so its problem body can be raised
                await response.aread()
                await response.aclose()
            return response

        response = await self._client._send(attempt)
        try:
            yield FileDownload(int(response.headers.get("content-length", -1)), response)
        finally:
            await response.aclose()

    async def refresh(self) -> AsyncSession:
        self.data = await self._json(partial(get_session_route._get_kwargs, self.id))
        return self

    async def checkpoint(self) -> dict[str, Any]:
        return dict(await self._json(partial(checkpoint_route._get_kwargs, self.id)))

    async def checkpoints(self) -> list[dict[str, Any]]:
        return list(await self._json(partial(checkpoints_route._get_kwargs, self.id)))

    async def download(self, snapshot_id: str) -> bytes:
        return (await self._client._rest(partial(archive_route._get_kwargs, snapshot_id))).content

    async def export_workspace(self) -> bytes:
        """The workspace as it is now: a tar of workspace-relative paths (nothing is stored)."""
        return (await self._client._rest(partial(export_route._get_kwargs, self.id))).content

    async def import_workspace(self, archive: bytes) -> dict[str, Any]:
        """Unpack a tar (any compression) over the workspace; its files replace those there."""
        # The OpenAPI document leaves this raw body out, so the generated function cannot send
        # it: the generated route (method and URL) is sent with the body added.
        route = {**import_route._get_kwargs(self.id), "content": archive}
        route["headers"] = {"content-type": "application/x-tar"}
        return dict(_json(await self._client._send(lambda: self._client._http.request(**route))))

    async def suspend(self) -> dict[str, Any]:
        self.data = await self._json(partial(suspend_route._get_kwargs, self.id))
        return self.state()

    async def resume(self) -> str:
        body = await self._json(partial(resume_route._get_kwargs, self.id))
        self.data = body["session"]
        self.resumed_how = body["how"]
        return str(body["how"])

    async def activities(self) -> list[dict[str, Any]]:
        # limit and offset unset: the service's defaults, as before the generated layer
        endpoint = partial(activities_route._get_kwargs, self.id, limit=UNSET, offset=UNSET)
        return list(await self._json(endpoint))

    async def end(self) -> None:
        await self._client._rest(partial(end_route._get_kwargs, self.id))
        self.data = {**self.data, "status": "ended"}

    async def pty(self, cols: int = 80, rows: int = 24) -> AsyncPty:
        return AsyncPty(await connect(self._client, f"/v1/sessions/{self.id}/pty?cols={cols}&rows={rows}"))
