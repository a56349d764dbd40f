"""Background processes of a session: ``session.processes`` and :class:`AsyncProcess`.

Each REST request is built by the generated function of its route (``_api.api.processes``); only
the live output stream is a WebSocket (:class:`~sandlot_client._streams.OutputStream`). A process
started with ``stdin=True`` (a pipe) or ``tty=True`` (a terminal fed by that pipe) takes input
through :meth:`AsyncProcess.write`.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING, Any

from sandlot_client import _bodies
from sandlot_client._api.api.processes import (
    v1_sessions_session_id_processes_list_processes as list_processes,
)
from sandlot_client._api.api.processes import (
    v1_sessions_session_id_processes_process_id_get_process as get_process,
)
from sandlot_client._api.api.processes import (
    v1_sessions_session_id_processes_process_id_kill_kill as kill_process,
)
from sandlot_client._api.api.processes import (
    v1_sessions_session_id_processes_process_id_output_output as process_output,
)
from sandlot_client._api.api.processes import (
    v1_sessions_session_id_processes_process_id_stdin_stdin as process_stdin,
)
from sandlot_client._api.api.processes import v1_sessions_session_id_processes_start as start_process
from sandlot_client._streams import OutputStream

if TYPE_CHECKING:
    from sandlot_client.aio import AsyncSession

__all__ = ["AsyncProcess", "Processes"]


class Processes:
    """``session.processes``: start commands detached and list them."""

    def __init__(self, session: AsyncSession) -> None:
        self._s = session

    async def start(
        self,
        command: str,
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        tty: bool = False,
    ) -> AsyncProcess:
        """Start ``command`` detached. ``stdin``: it reads what :meth:`AsyncProcess.write`
        sends (otherwise /dev/null); ``tty``: it runs on a terminal fed by that input (the
        service answers 422, :class:`~sandlot_client.errors.InvalidInput` with ``field`` "tty",
        where the sandbox's image cannot open one)."""
        body = _bodies.process_start(command, env, cwd, stdin=stdin, tty=tty)
        data = await self._s._json(partial(start_process._get_kwargs, self._s.id, body=body))
        return AsyncProcess(self._s, data)

    async def list(self) -> list[dict[str, Any]]:
        return list(await self._s._json(partial(list_processes._get_kwargs, self._s.id)))


class AsyncProcess:
    """One background process: poll its ``status``, ``wait``, ``kill``, read or ``stream`` output."""

    def __init__(self, session: AsyncSession, data: dict[str, Any]) -> None:
        self._s = session
        self.data = data

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def _path(self) -> str:
        return f"/v1/sessions/{self._s.id}/processes/{self.id}"  # the WebSocket stream's base

    async def status(self) -> dict[str, Any]:
        self.data = await self._s._json(partial(get_process._get_kwargs, self._s.id, self.id))
        return self.data

    async def wait(self, poll: float = 0.2) -> dict[str, Any]:
        """Poll until the process has ended; returns its final status."""
        while True:
            data = await self.status()
            if data["status"] != "running":
                return data
            await asyncio.sleep(poll)

    async def kill(self) -> dict[str, Any]:
        self.data = await self._s._json(partial(kill_process._get_kwargs, self._s.id, self.id))
        return self.data

    async def write(self, data: str, *, eof: bool = False) -> None:
        """Send ``data`` to the process's stdin (at most 64 KiB encoded), then with ``eof``
        close it. :class:`~sandlot_client.errors.Conflict` when it has no stdin, has ended or
        its stdin is closed. Not retried: a write whose answer was lost may have gone in."""
        body = _bodies.process_input(data, eof)
        await self._s._client._rest(partial(process_stdin._get_kwargs, self._s.id, self.id, body=body))

    async def output(self, offset: int = 0, limit: int = 1 << 20) -> bytes:
        endpoint = partial(process_output._get_kwargs, self._s.id, self.id, offset=offset, limit=limit)
        return (await self._s._client._rest(endpoint)).content

    def stream(self, offset: int = 0, *, reconnect: bool = True, max_reconnects: int = 20) -> OutputStream:
        """Output from ``offset`` as it is written. A dropped connection is resumed from the
        bytes already received (``reconnect``), so nothing is lost or repeated."""
        return OutputStream(self, offset, reconnect, max_reconnects)
