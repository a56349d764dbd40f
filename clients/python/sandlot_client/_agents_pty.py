"""The Agents SDK's interactive exec (``exec_command`` and ``write_stdin``) on Sandlot background
processes, for :mod:`sandlot_client.openai_agents`.

Each SDK process is one Sandlot background process, so it keeps running between the model's
calls, whatever the API process or connection: ``tty=False`` starts it with stdin from
/dev/null (as the SDK's own Docker and local sandboxes do: ``write_stdin`` may only poll it),
``tty=True`` on a terminal in the sandbox fed by a stdin pipe. Where the sandbox's image cannot
open a terminal (no util-linux ``script``), it gets the stdin pipe alone and the output says so.

Each call collects output for its yield time through the process's output stream (a
WebSocket), from the number of bytes already taken: a connection lost in the middle is resumed
from there by :class:`~sandlot_client._streams.OutputStream`, and what one call received but did
not hand to the model (an unfinished UTF-8 character) waits in memory for the next, so the model
sees every byte once. Calls on one process take turns.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from agents.sandbox.errors import ExecTransportError, PtySessionNotFoundError
from agents.sandbox.session.pty_output import collect_pty_output
from agents.sandbox.session.pty_types import (
    PTY_PROCESSES_MAX,
    PtyExecUpdate,
    allocate_pty_process_id,
    clamp_pty_yield_time_ms,
    process_id_to_prune_from_meta,
    resolve_pty_write_yield_time_ms,
)

from sandlot_client._processes import AsyncProcess
from sandlot_client._streams import OutputStream
from sandlot_client.aio import AsyncSession
from sandlot_client.errors import Conflict, InvalidInput, SandlotError, TransportError

__all__ = ["NO_TERMINAL", "PtyProcesses"]

#: Written before the output of a ``tty=True`` command that got a stdin pipe but no terminal.
NO_TERMINAL = b"[sandlot: this sandbox cannot open a terminal; stdin is a pipe, ^C is a plain byte]\n"
#: The exit code reported for a process that was killed (Sandlot knows no signal for it).
KILLED = -1
#: Characters per stdin write: at most 64 KiB once UTF-8 encoded, the service's bound.
_STDIN_CHARS = 16 << 10


@dataclass
class _Entry:
    process: AsyncProcess
    stdin: bool
    notice: bytes = b""
    offset: int = 0  # output bytes received: where the next stream starts
    chunks: deque[bytes] = field(default_factory=deque)  # received, not yet given to the model
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # the SDK's lock on ``chunks``
    notify: asyncio.Event = field(default_factory=asyncio.Event)
    turn: asyncio.Lock = field(default_factory=asyncio.Lock)  # one call at a time
    exit: dict[str, Any] | None = None  # the stream's final status frame, once it came
    failure: SandlotError | None = None
    stream: OutputStream | None = None  # the one a call is reading
    last_used: float = field(default_factory=time.monotonic)


class PtyProcesses:
    """The interactive processes of one SDK session, by the SDK's process id."""

    def __init__(self, remote: AsyncSession) -> None:
        self._remote = remote
        self._lock = asyncio.Lock()
        self._entries: dict[int, _Entry] = {}

    async def start(
        self, argv: list[str], *, cwd: str, tty: bool, yield_ms: int, max_tokens: int | None
    ) -> PtyExecUpdate:
        """Start ``argv`` (an ``sh -c`` line, as the SDK prepared it) and collect its output
        for ``yield_ms``."""
        entry = await self._launch(argv, cwd=cwd, tty=tty)
        async with self._lock:
            process_id = allocate_pty_process_id(set(self._entries))
            pruned = self._prune()
            self._entries[process_id] = entry
        if pruned is not None:
            await _kill(pruned)
        async with entry.turn:
            return await self._update(process_id, entry, clamp_pty_yield_time_ms(yield_ms), max_tokens)

    async def write(
        self, process_id: int, chars: str, *, yield_ms: int, max_tokens: int | None
    ) -> PtyExecUpdate:
        """Write ``chars`` to the process's stdin (none: only poll), then collect its output."""
        async with self._lock:
            entry = self._entries.get(process_id)
        if entry is None:
            raise PtySessionNotFoundError(session_id=process_id)
        if chars and not entry.stdin:
            raise RuntimeError("stdin is not available for this process")  # the SDK's words
        async with entry.turn:
            for start in range(0, len(chars), _STDIN_CHARS):
                try:
                    await entry.process.write(chars[start : start + _STDIN_CHARS])
                except Conflict:  # it ended or closed its stdin: what it printed is read below
                    break
                except SandlotError as exc:
                    raise ExecTransportError(command=["write_stdin"], cause=exc) from exc
            entry.last_used = time.monotonic()
            yield_ms = resolve_pty_write_yield_time_ms(yield_time_ms=yield_ms, input_empty=not chars)
            return await self._update(process_id, entry, yield_ms, max_tokens)

    async def terminate_all(self) -> None:
        """Kill every process still known (the session is stopping or closing)."""
        async with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            await _kill(entry)

    async def _launch(self, argv: list[str], *, cwd: str, tty: bool) -> _Entry:
        command = shlex.join(argv)
        processes = self._remote.processes
        try:
            try:
                return _Entry(await processes.start(command, cwd=cwd, stdin=tty, tty=tty), stdin=tty)
            except InvalidInput as exc:
                if not (tty and exc.body.get("field") == "tty"):
                    raise
            process = await processes.start(command, cwd=cwd, stdin=True)
            return _Entry(process, stdin=True, notice=NO_TERMINAL)
        except InvalidInput as exc:  # refused before anything ran (a command too long...)
            raise ExecTransportError(command=argv, cause=exc, context={"retry_safe": True}) from exc
        except SandlotError as exc:
            raise ExecTransportError(command=argv, cause=exc, retryable=exc.retryable) from exc

    async def _update(
        self, process_id: int, entry: _Entry, yield_ms: int, max_tokens: int | None
    ) -> PtyExecUpdate:
        output, token_count = await _collect(entry, yield_ms, max_tokens)
        output, entry.notice = entry.notice + output, b""
        if entry.exit is None:
            return PtyExecUpdate(process_id, output, None, token_count)
        async with self._lock:
            self._entries.pop(process_id, None)
        code = entry.exit.get("exit_code")
        return PtyExecUpdate(None, output, KILLED if code is None else int(code), token_count)

    def _prune(self) -> _Entry | None:
        """At the SDK's limit of processes, the one it would drop (the least recently used,
        ended ones first); the caller kills it."""
        if len(self._entries) < PTY_PROCESSES_MAX:
            return None
        meta = [(pid, e.last_used, e.exit is not None) for pid, e in self._entries.items()]
        victim = process_id_to_prune_from_meta(meta)
        return None if victim is None else self._entries.pop(victim, None)


async def _collect(entry: _Entry, yield_ms: int, max_tokens: int | None) -> tuple[bytes, int | None]:
    """The output that came within ``yield_ms`` (less if the process ended first), as the SDK
    truncates it, with the original token count when it did."""
    entry.failure = entry.stream = None
    pump = asyncio.create_task(_pump(entry))
    try:
        output, token_count, _ = await collect_pty_output(
            output_chunks=entry.chunks,
            output_lock=entry.lock,
            output_notify=entry.notify,
            is_done=lambda: entry.exit is not None or entry.failure is not None,
            yield_time_ms=yield_ms,
            max_output_tokens=max_tokens,
        )
    finally:
        pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await pump
    if entry.exit is None and entry.stream is not None and entry.stream.exit is not None:
        # the final frame came, but the connection was still closing: every chunk before it was
        # taken, so the process has ended with what was queued (an unfinished character too)
        entry.exit = entry.stream.exit
        async with entry.lock:
            output += b"".join(entry.chunks).decode(errors="replace").encode()
            entry.chunks.clear()
    if entry.failure is not None and not output:  # nothing to show: say why
        raise ExecTransportError(command=["poll"], cause=entry.failure, retryable=entry.failure.retryable)
    return output, token_count


async def _pump(entry: _Entry) -> None:
    """Move the process's output into ``entry.chunks`` from ``entry.offset`` until it ends (or
    the collecting call cancels this). A chunk counts as received only once it is queued, so a
    cancellation anywhere loses nothing: the next stream asks for it again."""
    stream = entry.stream = entry.process.stream(entry.offset)
    try:
        async for chunk in stream:
            async with entry.lock:
                entry.chunks.append(chunk)
                entry.offset += len(chunk)
            entry.notify.set()
        entry.exit = stream.exit
    except SandlotError as exc:  # the stream could not be resumed, or the service refused it
        entry.failure = exc
    except Exception as exc:  # the handshake refused (a session that ended: 404), and the like
        entry.failure = TransportError(f"output stream failed: {exc!r}")
    entry.notify.set()


async def _kill(entry: _Entry) -> None:
    if entry.exit is None:
        with contextlib.suppress(SandlotError):  # ended, or the session is already gone
            await entry.process.kill()
