"""Whether a finished command may have met a sandbox's memory or process limit."""

from __future__ import annotations

__all__ = ["worth_a_look"]

#: What a command (or the shell running it) says when a limit stopped something: the kernel's
#: SIGKILL reported by a parent, a refused fork, a failed allocation.
_LIMIT_SIGNS = (
    b"Killed",
    b"fork",
    b"Resource temporarily unavailable",
    b"Cannot allocate memory",
    b"MemoryError",
)
_SIGKILL_EXIT = 137


def worth_a_look(exit_code: int | None, timed_out: bool, stderr: bytes) -> bool:
    """Whether a finished command may have met the memory or process limit, so that the
    sandbox's counters are worth reading (a look costs a ``docker exec``: a command that
    merely failed, such as a ``grep`` that found nothing, does not pay for it). A command that
    succeeded may have met one too: a loop whose forks were refused goes on and ends with 0,
    saying so on stderr; were it not looked at, the next command that is would be the one
    reported (#27)."""
    if timed_out or exit_code == _SIGKILL_EXIT:
        return True
    return any(sign in stderr[-4096:] for sign in _LIMIT_SIGNS)
