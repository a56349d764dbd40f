"""Interactive terminals: who may open one on which sandbox, and the PTY itself.

A terminal belongs to a session (its sandbox) or to a sandbox used directly. Browsers cannot
send headers on a WebSocket, so a caller may trade its key for a one-minute token that opens
only that terminal, once (its audience is ``pty:<id>``; a used token is refused).
"""

from __future__ import annotations

from sandlot.domain.status import SandboxStatus
from sandlot.runtime.base import PtyStream
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.process_start import StartGate
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService
from sandlot.store.tables import Sandbox

__all__ = ["SHELL", "TerminalService"]

#: What a terminal runs, and its environment.
SHELL = ["/bin/sh"]
_ENV = {"TERM": "xterm-256color"}


class TerminalService:
    def __init__(
        self, accounts: AccountService, sandboxes: SandboxService, sessions: SessionService, gate: StartGate
    ) -> None:
        self._accounts = accounts
        self._sandboxes = sandboxes
        self._sessions = sessions
        self._gate = gate

    async def caller(self, authorization: str | None, token: str | None, target: str) -> Principal:
        """The caller from its ``Authorization`` header, or else from a terminal token for
        ``target`` (a session or sandbox id); neither is the usual 401."""
        if authorization:
            return await self._accounts.authenticate(authorization)
        if token:
            return await self._accounts.authenticate_token(token, f"pty:{target}", once=True)
        return await self._accounts.authenticate(None)

    async def token(self, principal: Principal, target: str, *, session: bool) -> tuple[str, int]:
        """(token, expiry as epoch seconds) for the terminal of a session or sandbox the caller
        may use."""
        await self.ref(principal, target, session=session)
        return await self._accounts.issue_token(principal, f"pty:{target}")

    async def ref(self, principal: Principal, target: str, *, session: bool) -> str:
        """The runtime reference of the sandbox behind the terminal (checked: the caller's,
        and usable; a sandbox in a session only while that session is active). Apart from
        :meth:`open` so that a refusal comes before the WebSocket is accepted, as an HTTP
        error."""
        if session:
            _, box = await self._sessions.sandbox_of(principal, target)
        else:
            box = await self._sandboxes.usable(principal, target)
            if (held := _session_of(box)) is not None:
                _, box = await self._sessions.sandbox_of(principal, held)
        assert box.runtime_ref is not None
        return box.runtime_ref

    async def open(
        self, principal: Principal, target: str, *, session: bool, cols: int, rows: int
    ) -> PtyStream:
        """The terminal; one in a session's sandbox (asked for by the session, or by the
        sandbox's id) is opened through the :class:`StartGate`: a terminal opened while a
        suspend stops the sandbox's processes would run on in the suspended session."""
        if session:
            held = target
        else:
            box = await self._sandboxes.usable(principal, target)
            found = _session_of(box)
            if found is None:  # a sandbox used directly
                assert box.runtime_ref is not None
                return await self._open(box.runtime_ref, cols, rows)
            held = found
        term: PtyStream | None = None
        try:
            async with self._gate.enter(principal, held) as (_, box):
                assert box.runtime_ref is not None
                term = await self._open(box.runtime_ref, cols, rows)
        except BaseException:
            if term is not None:  # the barrier's release failed: no terminal left behind
                await term.close()
            raise
        return term

    async def _open(self, ref: str, cols: int, rows: int) -> PtyStream:
        return await self._sandboxes.runtime.open_pty(ref, SHELL, cols=cols, rows=rows, env=_ENV)


def _session_of(box: Sandbox) -> str | None:
    """The session a sandbox serves, if any."""
    return box.session_id if box.status == SandboxStatus.IN_SESSION.value else None
