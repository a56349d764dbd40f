"""Interactive terminals: who may open one on which sandbox, and the PTY itself.

A terminal belongs to a session (its sandbox) or to a sandbox used directly. Browsers cannot
send headers on a WebSocket, so a caller may trade its key for a one-minute token that opens
only that terminal (its audience is ``pty:<id>``).
"""

from __future__ import annotations

from sandlot.runtime.base import PtyStream
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.sandboxes import SandboxService
from sandlot.services.sessions import SessionService

__all__ = ["SHELL", "TerminalService"]

#: What a terminal runs, and its environment.
SHELL = ["/bin/sh"]
_ENV = {"TERM": "xterm-256color"}


class TerminalService:
    def __init__(self, accounts: AccountService, sandboxes: SandboxService, sessions: SessionService) -> None:
        self._accounts = accounts
        self._sandboxes = sandboxes
        self._sessions = sessions

    async def caller(self, authorization: str | None, token: str | None, target: str) -> Principal:
        """The caller from its ``Authorization`` header, or else from a terminal token for
        ``target`` (a session or sandbox id); neither is the usual 401."""
        if authorization:
            return await self._accounts.authenticate(authorization)
        if token:
            return await self._accounts.authenticate_token(token, f"pty:{target}")
        return await self._accounts.authenticate(None)

    async def token(self, principal: Principal, target: str, *, session: bool) -> tuple[str, int]:
        """(token, expiry as epoch seconds) for the terminal of a session or sandbox the caller
        may use."""
        await self.ref(principal, target, session=session)
        return await self._accounts.issue_token(principal, f"pty:{target}")

    async def ref(self, principal: Principal, target: str, *, session: bool) -> str:
        """The runtime reference of the sandbox behind the terminal (checked: the caller's,
        and usable). Separate from :meth:`open` so that a refusal comes before the WebSocket
        is accepted, as an HTTP error."""
        if session:
            _, box = await self._sessions.sandbox_of(principal, target)
        else:
            box = await self._sandboxes.usable(principal, target)
        assert box.runtime_ref is not None
        return box.runtime_ref

    async def open(self, ref: str, cols: int, rows: int) -> PtyStream:
        return await self._sandboxes.runtime.open_pty(ref, SHELL, cols=cols, rows=rows, env=_ENV)
