"""Where a runtime runs the service's own programs: in a sandbox's attached shell when this
process holds one that is idle, else in a process of their own.

A ``docker exec`` costs the engine about 50 ms of CPU, and two cores run about 40 of them a
second: a file read, a file write or a process's status each paying one was most of what an
agent cost the engine. A shell that is already attached to the sandbox (the session's, or the
one opened while it waits in the pool) runs the same program in a subshell in about a
millisecond (:meth:`~sandlot.runtime.shell.PersistentShell.program`). The runtime is handed a
lookup (``SandboxRuntime.use_channels``), so it stays ignorant of sessions and of which
process holds which shell; a sandbox this process holds no idle shell for is served as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from sandlot.runtime.base import ExecResult

__all__ = ["INLINE_MAX", "ChannelLookup", "Channels", "ProgramChannel"]

#: A program's input goes through a channel raw, in the shell's own input once it asks for it
#: (spooled whole before the program starts, see ``__sl_do``), and a file read through one comes
#: back whole, up to this size; beyond it a ``docker exec``'s fifty milliseconds matter little
#: against moving the bytes, which it streams.
INLINE_MAX = 4 << 20


class ProgramChannel(Protocol):
    """An attached shell that can run the service's programs between a session's commands."""

    async def program(
        self,
        script: str,
        args: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        timeout: float,
        output_limit: int = 1 << 16,
        wait: float = 1.0,
    ) -> ExecResult | None:
        """The program's result, or None when it cannot run there now."""
        ...


#: Finds the channel for a runtime reference (None: no idle shell of this process's there).
ChannelLookup = Callable[[str], ProgramChannel | None]


class Channels:
    """A runtime's view of the channels: empty until a lookup is given."""

    def __init__(self) -> None:
        self._lookup: ChannelLookup | None = None

    def use(self, lookup: ChannelLookup) -> None:
        self._lookup = lookup

    def find(self, ref: str) -> ProgramChannel | None:
        return self._lookup(ref) if self._lookup is not None else None

    async def run(
        self,
        ref: str,
        script: str,
        args: Sequence[str],
        *,
        stdin: bytes | None,
        timeout: float,
        output_limit: int,
    ) -> ExecResult | None:
        """Run ``sh -c script sh args...`` in ``ref``'s channel; None when there is none free."""
        channel = self.find(ref)
        if channel is None:
            return None
        return await channel.program(script, args, stdin=stdin, timeout=timeout, output_limit=output_limit)
