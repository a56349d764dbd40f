"""Starting what runs on in a session's sandbox (a background process, a terminal): the gate
that keeps a start from running beside a suspend, and what a process's start printed on its
stream (which the sandbox user can write into too): the first line, the pid or ``!CODE``, and
what that means."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager

from sandlot.domain.errors import DiskFull, InvalidInput, SandboxStateError
from sandlot.runtime.base import ProcessStream
from sandlot.services.accounts import Principal
from sandlot.services.sessions import SessionService
from sandlot.store.leader import Exclusive, Turns, session_lock
from sandlot.store.tables import Sandbox, Session

__all__ = ["StartGate", "StartTurns", "first_line", "number", "started_pid"]


class StartTurns:
    """At most ``at_once`` starts of one tenant at a time in this process; the others wait
    their turn, at most ``wait`` seconds (then ``Busy``). A start holds a connection of the
    locks' small engine while it runs (its barrier against a suspend), and the sandbox user can
    make a start last (by stopping what it starts): one tenant's stalled starts must not take
    every such connection from the others."""

    def __init__(self, at_once: int, wait: float) -> None:
        self._turns, self._wait = Turns(at_once), wait

    def turn(self, tenant_id: str) -> AbstractAsyncContextManager[None]:
        busy = "this tenant's other process and terminal starts are still under way; try again"
        return self._turns.turn(tenant_id, self._wait, busy)


class StartGate:
    """Where a start of something that runs on in a session's sandbox (a background process, a
    terminal) waits: never beside a suspend, which holds the session's lock, since the suspend's
    stop of the sandbox's processes would miss it and it would run on, unstopped, in a
    suspended session; once the suspend is done the start finds the session suspended (409).
    Each start holds a connection of the locks' small engine while it runs, so one tenant's
    starts take turns (:class:`StartTurns`)."""

    def __init__(
        self, sessions: SessionService, exclusive: Exclusive, at_once: int = 2, wait: float = 30.0
    ) -> None:
        self._sessions, self._exclusive = sessions, exclusive
        self._turns = StartTurns(at_once, wait)

    @contextlib.asynccontextmanager
    async def enter(self, principal: Principal, session_id: str) -> AsyncIterator[tuple[Session, Sandbox]]:
        """The caller's active session and its sandbox, looked at again under the barrier."""
        named, _ = await self._sessions.sandbox_of(principal, session_id)
        barrier = self._exclusive.barrier(session_lock(named.id))
        async with self._turns.turn(named.tenant_id), barrier:
            yield await self._sessions.sandbox_of(principal, named.id)  # active still?


async def first_line(stream: ProcessStream) -> tuple[bytes, bytes]:
    """The first line of a stream's stdout (stripped) and what came after it in its piece; a
    first line of more than 32 bytes (the sandbox user can write into the stream) is none."""
    head = b""
    while (chunk := await stream.read()) is not None:
        if chunk[0] == 1:
            head += chunk[1]
            line, found, rest = head.partition(b"\n")
            if len(line) > 32:
                return b"!garbled", b""
            if found:
                return line.strip(), rest
    return head.strip(), b""


def number(text: str) -> int | None:
    """An integer a column can hold, from text a sandbox wrote (None when it is not one)."""
    text = text.strip()
    if not text.lstrip("-").isdigit() or len(text) > 12:
        return None
    value = int(text)
    return value if -(1 << 31) <= value < 1 << 31 else None


def started_pid(pid: bytes, *, tty: bool) -> int:
    """The pid a start printed, or the error its ``!CODE`` stands for (``!4``: no terminal to
    be had, ``!7``: no room on the disk; anything else that is no pid: the start failed)."""
    if tty and pid == b"!4":
        raise InvalidInput(
            "this sandbox cannot give a process a terminal (its image has no util-linux "
            "`script`); start it with stdin instead",
            field="tty",
        )
    if pid == b"!7":
        raise DiskFull("the sandbox's disk is full: there is no room for the process's output")
    found = number(pid.decode("ascii", "replace"))
    if found is None or found <= 0:
        raise SandboxStateError(f"could not start the process: {pid[-300:]!r}")
    return found
