"""The sandbox status machine.

Every status change of a sandbox goes through :func:`transition`, a pure function, so the
allowed moves live in one table that tests cover entirely. Callers persist the result as a
``sandbox_events`` row with the reason.
"""

from __future__ import annotations

from enum import StrEnum

from sandlot.domain.errors import Conflict, SessionEnded

__all__ = [
    "SESSION_ACTIVE",
    "SESSION_ENDED",
    "SESSION_SUSPENDED",
    "TERMINAL",
    "TRANSITIONS",
    "IllegalTransition",
    "SandboxStatus",
    "session_unusable",
    "transition",
]

# a session's status, as stored
SESSION_ACTIVE = "active"
SESSION_SUSPENDED = "suspended"
SESSION_ENDED = "ended"


def session_unusable(session_id: str, status: str) -> Conflict:
    """409 for a session that is not active: :class:`SessionEnded` once it has ended (for
    good), a plain conflict while it is suspended (a resume makes it usable)."""
    if status == SESSION_ENDED:
        return SessionEnded(f"session {session_id} has ended", status=status)
    return Conflict(f"session {session_id} is {status}", status=status)


class SandboxStatus(StrEnum):
    """Where a sandbox is in its life."""

    CREATED = "created"
    SETTING_UP = "setting_up"
    READY = "ready"
    ACQUIRED = "acquired"
    IN_SESSION = "in_session"
    EXITING_SESSION = "exiting_session"
    SHUTTING_DOWN = "shutting_down"
    OFFLINE = "offline"


S = SandboxStatus

#: status -> statuses it may move to. Anything may shut down; only shutting_down reaches offline
#: in the normal course, but a vanished container takes any status straight to offline.
TRANSITIONS: dict[SandboxStatus, frozenset[SandboxStatus]] = {
    S.CREATED: frozenset({S.SETTING_UP, S.SHUTTING_DOWN, S.OFFLINE}),
    # setting_up -> acquired: created on demand for a waiting session, never visible as ready.
    S.SETTING_UP: frozenset({S.READY, S.ACQUIRED, S.SHUTTING_DOWN, S.OFFLINE}),
    S.READY: frozenset({S.ACQUIRED, S.SHUTTING_DOWN, S.OFFLINE}),
    S.ACQUIRED: frozenset({S.IN_SESSION, S.READY, S.SHUTTING_DOWN, S.OFFLINE}),
    S.IN_SESSION: frozenset({S.EXITING_SESSION, S.SHUTTING_DOWN, S.OFFLINE}),
    S.EXITING_SESSION: frozenset({S.READY, S.SHUTTING_DOWN, S.OFFLINE}),
    S.SHUTTING_DOWN: frozenset({S.OFFLINE}),
    S.OFFLINE: frozenset(),
}

TERMINAL = frozenset({S.OFFLINE})


class IllegalTransition(Conflict):
    """A status change the machine does not allow."""

    code = "illegal_transition"


def transition(current: SandboxStatus, target: SandboxStatus) -> SandboxStatus:
    """Return ``target`` if ``current`` may move to it, else raise :class:`IllegalTransition`."""
    if target not in TRANSITIONS[current]:
        raise IllegalTransition(
            f"sandbox cannot go from {current.value} to {target.value}",
            current=current.value,
            target=target.value,
        )
    return target
