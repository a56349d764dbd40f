"""The persistent shells of one API process: a session's, and those opened on pool sandboxes
while they wait (see :class:`ShellManager`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine

from sandlot.domain.errors import Conflict
from sandlot.domain.status import SESSION_SUSPENDED
from sandlot.observability.metrics import Metrics
from sandlot.runtime.base import ProcessStream, SandboxRuntime
from sandlot.runtime.shell import PersistentShell

__all__ = ["ShellManager"]

log = logging.getLogger(__name__)


class ShellManager:
    """The attached shells of this process: one per session, opened on first use or, for a
    pool sandbox, while it waits in the pool (``warm``), so a session's first command does not
    wait for a ``docker exec`` to open its shell."""

    def __init__(self, runtime: SandboxRuntime, metrics: Metrics | None = None) -> None:
        self._runtime = runtime
        self._metrics = metrics
        self._shells: dict[str, PersistentShell] = {}
        self._warm: dict[str, PersistentShell] = {}  # by sandbox id, not yet a session's
        self._launchers: dict[str, PersistentShell] = {}  # by session id (see runtime/launcher.py)
        self._tasks: set[asyncio.Task[None]] = set()
        # sessions a suspend here parked: no shell opens for them (True while it is under way)
        self._parked: dict[str, bool] = {}

    def alive(self, session_id: str) -> bool:
        """Whether this process holds a working shell for the session. Ending a session (reset)
        or losing its sandbox kills that shell, so while it lives the session owns its sandbox."""
        shell = self._shells.get(session_id)
        return shell is not None and shell.attached and not shell.broken and session_id not in self._parked

    async def park(self, session_id: str) -> None:
        """Close the session's shells and open none for it while it is suspended here: a call
        still on its way when the session is suspended must not start a process the freeze
        missed. Lifted by :meth:`unpark` (the suspend failed, or a resume here), or once the
        suspend is over (:meth:`parked_until_seen`) by :meth:`seen` (the store shows it resumed
        or ended, perhaps by another process)."""
        self._parked[session_id] = True
        await self.close(session_id, unpark=False)

    def parked_until_seen(self, session_id: str) -> None:
        if session_id in self._parked:
            self._parked[session_id] = False

    def unpark(self, session_id: str) -> None:
        self._parked.pop(session_id, None)

    def seen(self, session_id: str, status: str) -> None:
        """The store shows the session in ``status``."""
        if status != SESSION_SUSPENDED and self._parked.get(session_id) is False:
            del self._parked[session_id]

    def _open_for(self, session_id: str) -> None:
        if session_id in self._parked:
            raise Conflict(f"session {session_id} is suspended", status="suspended")

    def get(self, session_id: str, ref: str, sandbox_id: str | None = None) -> PersistentShell:
        """The session's shell: the one it has, else the one opened while its sandbox
        (``sandbox_id``) waited in the pool, else a new one that attaches on first use."""
        self._open_for(session_id)
        shell = self._shells.get(session_id)
        if shell is None or shell.broken:
            warm = self._warm.pop(sandbox_id, None) if sandbox_id else None
            if warm is not None and not warm.ended and warm.ref == ref:
                warm.adopt(session_id)
                shell = warm
            else:
                if warm is not None:
                    self._spawn(warm.close())
                shell = PersistentShell(self._runtime, ref, session_id, self._metrics)
            self._shells[session_id] = shell
        return shell

    def launcher(self, session_id: str, ref: str) -> PersistentShell:
        """The shell the session's one-shot commands run from (opened by the first of them,
        closed with the session's own; see :mod:`sandlot.runtime.launcher`)."""
        self._open_for(session_id)
        shell = self._launchers.get(session_id)
        if shell is None or shell.ended or shell.ref != ref:
            if shell is not None:
                self._spawn(shell.close())
            shell = self._launchers[session_id] = PersistentShell(self._runtime, ref, None, self._metrics)
        return shell

    def warm_soon(self, sandbox_id: str, ref: str, stream: ProcessStream | None = None) -> None:
        """Open a shell for a pool sandbox that just became ready, in the background; it is
        registered at once, so a session claiming the sandbox meanwhile adopts it. ``stream``:
        a shell already started there (the reset's, see ``SandboxRuntime.reset``) to boot."""
        if stream is None and sandbox_id in self._warm:
            return
        shell = self._register_warm(sandbox_id, ref, stream)
        self._spawn(self._open_warm(sandbox_id, shell))

    async def warm(self, sandbox_id: str, ref: str, stream: ProcessStream | None = None) -> None:
        """Open a shell on a ready pool sandbox for the session that will claim it; that session
        may adopt it while it opens (its first command waits for it). A failure costs nothing:
        the session opens its own. The shell is dropped once its stream ends (the sandbox was
        shut down, or another process's session reset it)."""
        await self._open_warm(sandbox_id, self._register_warm(sandbox_id, ref, stream))

    def _register_warm(self, sandbox_id: str, ref: str, stream: ProcessStream | None) -> PersistentShell:
        shell = PersistentShell(self._runtime, ref, None, self._metrics, started=stream)
        old = self._warm.pop(sandbox_id, None)
        if old is not None:
            self._spawn(old.close())
        self._warm[sandbox_id] = shell
        return shell

    async def _open_warm(self, sandbox_id: str, shell: PersistentShell) -> None:
        try:
            await shell.open()
        except Exception as exc:
            log.info("could not open a shell on pool sandbox %s ahead of time: %s", sandbox_id, exc)
            if self._warm.get(sandbox_id) is shell:
                del self._warm[sandbox_id]
                await shell.close()  # not adopted: a session that adopted it retries on its own
            return
        shell.on_end(lambda: self._forget_warm(sandbox_id, shell))

    async def drop_warm(self, sandbox_id: str) -> None:
        """Close the shell opened for a pool sandbox that will not wait in the pool after all."""
        shell = self._warm.pop(sandbox_id, None)
        if shell is not None:
            await shell.close()

    def channel(self, ref: str) -> PersistentShell | None:
        """An idle shell of this process's attached to container ``ref`` (a session's, or one
        waiting in the pool) to run the service's programs in, if there is one; the runtime's
        channel lookup (see :mod:`sandlot.runtime.channels`)."""
        for shell in (*self._shells.values(), *self._warm.values(), *self._launchers.values()):
            if shell.ref == ref and shell.idle:
                return shell
        return None

    def in_session(self, ref: str) -> bool:
        """Whether a session's live shell in this process is attached to container ``ref``:
        then its sandbox left the pool (a housekeeping round's listing may be older)."""
        return any(s.ref == ref and not s.ended for s in self._shells.values())

    def _forget_warm(self, sandbox_id: str, shell: PersistentShell) -> None:
        if self._warm.get(sandbox_id) is shell:
            del self._warm[sandbox_id]
            self._spawn(shell.close())

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self, session_id: str, *, unpark: bool = True) -> None:
        if unpark:
            self._parked.pop(session_id, None)
        for shells in (self._shells, self._launchers):
            shell = shells.pop(session_id, None)
            if shell is not None:
                await shell.retire()  # a caller still holding it must not open it again

    async def close_all(self) -> None:
        for key in {*self._shells, *self._launchers}:
            await self.close(key)
        for shell in list(self._warm.values()):
            await shell.close()
        self._warm.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
