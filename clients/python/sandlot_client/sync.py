"""The blocking client: the async client run on a private event loop in an anyio blocking
portal's thread, so both have exactly the same behaviour (retries, errors, resumable streams)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Awaitable, Coroutine, Iterator
from contextlib import ExitStack
from typing import Any, TypeVar

from anyio.from_thread import start_blocking_portal

from sandlot_client.aio import AsyncProcess, AsyncPty, AsyncSandlot, AsyncSession, OutputStream
from sandlot_client.errors import ClientClosed

__all__ = ["Process", "Pty", "Sandlot", "Session"]

T = TypeVar("T")


class Sandlot:
    """``Sandlot(base_url, api_key)``: the blocking client (see :class:`AsyncSandlot`)."""

    def __init__(self, base_url: str, api_key: str, **kw: Any) -> None:
        portal = ExitStack()
        self._portal = portal.enter_context(start_blocking_portal(name="sandlot-client"))
        # Stops the portal (its loop and thread) on close; for a client never closed, at
        # interpreter exit while threads still run (stopping it later, when the portal is
        # collected, would wait forever on its frozen thread).
        self._stop_portal = weakref.finalize(self, portal.close)
        try:
            self.aio: AsyncSandlot = self._portal.call(_make, base_url, api_key, kw)
        except BaseException:
            self._stop_portal()
            raise
        self._closed = False
        self._closing = threading.Lock()

    def __enter__(self) -> Sandlot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._closing:  # once, whichever thread asks first
            if self._closed:
                return
            self._closed = True
        try:
            self._portal.call(_awaited, self.aio.close())
        finally:
            self._stop_portal()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await ``coro`` on the client's loop and hand back its result (or raise its error);
        :class:`ClientClosed` once :meth:`close` has begun, from any thread."""
        if self._closed:
            coro.close()
            raise ClientClosed("the client is closed")
        try:
            return self._portal.call(_awaited, coro)
        except RuntimeError as exc:  # the portal stopped, or its HTTP client closed, meanwhile
            coro.close()  # never awaited when the portal had already stopped
            if self._closed:
                raise ClientClosed("the client was closed during the call") from exc
            raise

    def create_environment(self, name: str, images: list[str], **fields: Any) -> dict[str, Any]:
        return self._run(self.aio.create_environment(name, images, **fields))

    def start_session(self, environment: str, **kw: Any) -> Session:
        return Session(self, self._run(self.aio.start_session(environment, **kw)))

    def session(self, environment: str, **kw: Any) -> _SessionContext:
        """``with client.session(environment="py") as s:`` ends the session on exit."""
        return _SessionContext(self, environment, kw)

    def resume(self, state: dict[str, Any] | str) -> Session:
        return Session(self, self._run(self.aio.resume(state)))


async def _make(base_url: str, api_key: str, kw: dict[str, Any]) -> AsyncSandlot:
    return AsyncSandlot(base_url, api_key, **kw)  # built on the loop that will use it


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


class _SessionContext:
    def __init__(self, client: Sandlot, environment: str, kw: dict[str, Any]) -> None:
        self._client, self._environment, self._kw = client, environment, kw
        self._session: Session | None = None

    def __enter__(self) -> Session:
        self._session = self._client.start_session(self._environment, **self._kw)
        return self._session

    def __exit__(self, *exc: object) -> None:
        if self._session is not None and self._session.status in ("active", "suspended"):
            self._session.end()


class _Feature:
    def __init__(self, session: Session, inner: Any) -> None:
        self._session, self._inner = session, inner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)

        def call(*args: Any, **kw: Any) -> Any:
            return self._session._run(method(*args, **kw))

        return call


class Session:
    """The blocking view of :class:`AsyncSession`."""

    def __init__(self, client: Sandlot, inner: AsyncSession) -> None:
        self._client = client
        self.aio = inner
        self.shell = _Feature(self, inner.shell)
        self.files = _Feature(self, inner.files)
        self.python = _Feature(self, inner.python)
        self.processes = _Processes(self)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._client._run(coro)

    @property
    def id(self) -> str:
        return self.aio.id

    @property
    def status(self) -> str:
        return self.aio.status

    @property
    def sandbox_id(self) -> str | None:
        return self.aio.sandbox_id

    @property
    def resumed_how(self) -> str | None:
        return self.aio.resumed_how

    def state(self) -> dict[str, Any]:
        return self.aio.state()

    def state_json(self) -> str:
        return self.aio.state_json()

    def checkpoint(self) -> dict[str, Any]:
        return self._run(self.aio.checkpoint())

    def checkpoints(self) -> list[dict[str, Any]]:
        return self._run(self.aio.checkpoints())

    def download(self, snapshot_id: str) -> bytes:
        return self._run(self.aio.download(snapshot_id))

    def export_workspace(self) -> bytes:
        return self._run(self.aio.export_workspace())

    def import_workspace(self, archive: bytes) -> dict[str, Any]:
        return self._run(self.aio.import_workspace(archive))

    def suspend(self) -> dict[str, Any]:
        return self._run(self.aio.suspend())

    def resume(self) -> str:
        return self._run(self.aio.resume())

    def activities(self) -> list[dict[str, Any]]:
        return self._run(self.aio.activities())

    def end(self) -> None:
        self._run(self.aio.end())

    def pty(self, cols: int = 80, rows: int = 24) -> Pty:
        return Pty(self, self._run(self.aio.pty(cols, rows)))


class _Processes:
    def __init__(self, session: Session) -> None:
        self._s = session

    def start(self, command: str, **kw: Any) -> Process:
        return Process(self._s, self._s._run(self._s.aio.processes.start(command, **kw)))

    def list(self) -> list[dict[str, Any]]:
        return self._s._run(self._s.aio.processes.list())


class Process:
    def __init__(self, session: Session, inner: AsyncProcess) -> None:
        self._s = session
        self.aio = inner

    @property
    def id(self) -> str:
        return self.aio.id

    def status(self) -> dict[str, Any]:
        return self._s._run(self.aio.status())

    def wait(self, poll: float = 0.2) -> dict[str, Any]:
        return self._s._run(self.aio.wait(poll))

    def kill(self) -> dict[str, Any]:
        return self._s._run(self.aio.kill())

    def write(self, data: str, *, eof: bool = False) -> None:
        self._s._run(self.aio.write(data, eof=eof))

    def output(self, offset: int = 0, limit: int = 1 << 20) -> bytes:
        return self._s._run(self.aio.output(offset, limit))

    def stream(self, offset: int = 0, **kw: Any) -> SyncOutputStream:
        return SyncOutputStream(self._s, self.aio.stream(offset, **kw))


class SyncOutputStream:
    """A blocking iterator over :class:`OutputStream` (same ``offset``, ``exit``, ``drop``)."""

    def __init__(self, session: Session, inner: OutputStream) -> None:
        self._s = session
        self.inner = inner
        self._it = inner.__aiter__()

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                yield self._s._run(_next(self._it))
            except StopAsyncIteration:
                return

    @property
    def offset(self) -> int:
        return self.inner.offset

    @property
    def exit(self) -> dict[str, Any] | None:
        return self.inner.exit

    @property
    def reconnects(self) -> int:
        return self.inner.reconnects

    def drop(self) -> None:
        self._s._run(self.inner.drop())


async def _next(it: Any) -> bytes:
    chunk: bytes = await it.__anext__()
    return chunk


class Pty:
    def __init__(self, session: Session, inner: AsyncPty) -> None:
        self._s = session
        self.aio = inner

    def send(self, data: str | bytes) -> None:
        self._s._run(self.aio.send(data))

    def resize(self, cols: int, rows: int) -> None:
        self._s._run(self.aio.resize(cols, rows))

    def signal(self, name: str = "INT") -> None:
        self._s._run(self.aio.signal(name))

    def recv(self) -> bytes | None:
        return self._s._run(self.aio.recv())

    def read_until(self, needle: bytes, timeout: float = 30) -> bytes:
        return self._s._run(self.aio.read_until(needle, timeout))

    def close(self) -> None:
        self._s._run(self.aio.close())
