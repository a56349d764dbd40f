"""Background processes: commands started detached in a session's sandbox.

A process runs in its own session inside the sandbox (``setsid``); its stdout and stderr go,
merged, to a file in the sandbox's state directory (on a tmpfs), of which the first
``process_output_limit`` bytes are kept. Output is read from any byte offset, and followed
live by :meth:`ProcessService.follow`, which a WebSocket streams: a client that reconnects with
the number of bytes it already has gets the rest, nothing lost and nothing twice. Killing a
process kills every process of its session, children that left its process tree included. The
rows in the store remember each process; status, CPU time and peak memory are read from the
sandbox whenever a client asks while it runs.

A process may take input: started with ``stdin`` its stdin is a pipe that :meth:`ProcessService.write`
feeds (and may close); with ``tty`` that pipe feeds a terminal the command runs on (``script``
in the sandbox opens it), so the command sees a real tty: echo, ^C, ``isatty``. Either way the
output is the same capped file, read and followed from any offset.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import AsyncIterator, Mapping, Sequence

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from sandlot.domain.env import validate_env
from sandlot.domain.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    SandboxStateError,
)
from sandlot.domain.paths import resolve_cwd
from sandlot.observability.tracing import current_traceparent, span
from sandlot.runtime.base import ExecRequest, SandboxRuntime
from sandlot.runtime.process_scripts import (
    PROC_FOLLOW,
    PROC_KILL,
    PROC_READ,
    PROC_START,
    PROC_STATUS,
    PROC_STDIN,
)
from sandlot.services.accounts import Principal
from sandlot.services.assets import resolve_placeholders
from sandlot.services.output_taps import Drained, OutputTap, OutputTaps
from sandlot.services.process_start import StartGate, first_line, number, started_pid
from sandlot.services.sessions import SessionService
from sandlot.settings import Settings
from sandlot.store.tables import Process, Sandbox
from sandlot.store.types import utcnow

__all__ = ["MAX_STDIN_BYTES", "RUNNING", "ProcessService"]

RUNNING = "running"
EXITED = "exited"
KILLED = "killed"
_CLOCK_TICKS = 100  # USER_HZ on Linux
_QUICK = 15.0
#: The most one write to a process's stdin carries: what a pipe holds, so a write to a process
#: that keeps up with its input never waits.
MAX_STDIN_BYTES = 64 << 10
#: The most a live stream joins into one piece (one WebSocket frame): large enough that a fast
#: stream costs few frames, small enough that a reader that drops mid-stream loses little.
_FRAME = 128 << 10
#: The most a live reader may fall behind (bytes held for it) before it catches up from the
#: stored output instead.
_HELD = 8 << 20
#: How long a small live piece waits for more to join it into one frame.
_LINGER = 0.002
#: The most one program reads of the stored output.
_STORED_READ = 1 << 20
#: How long a write waits for a process to read what is already in its pipe.
_STDIN_WAIT = 5.0
#: PROC_STDIN's refusals.
_STDIN_REFUSED = {
    3: "the process was started without stdin",
    4: "the process has ended",
    5: "the process's stdin is closed",
}


class ProcessService:
    def __init__(
        self,
        sessions: async_sessionmaker[AsyncSession],
        session_service: SessionService,
        runtime: SandboxRuntime,
        settings: Settings,
        gate: StartGate,
    ) -> None:
        self._gate = gate
        self._sessions = sessions
        self._session_service = session_service
        self._runtime = runtime
        self._settings = settings
        self._live = settings.process_live_relay and runtime.relays_output
        self.taps = OutputTaps()

    def _dir(self, box: Sandbox, row: Process) -> str:
        """The process's directory in its sandbox: the one recorded when it started, or where
        versions that did not record it kept it (on the state tmpfs)."""
        assert box.runtime_ref is not None
        return row.dir or f"{self._runtime.state_dir(box.runtime_ref)}/proc/{row.id}"

    async def _sh(
        self,
        box: Sandbox,
        script: str,
        *args: str,
        limit: int = 1 << 16,
        stdin: bytes | None = None,
        timeout: float = _QUICK,
    ) -> tuple[int | None, bytes]:
        """Run a bookkeeping program of ours (status, output, input, kill): in the session's
        shell when it is idle, which costs no ``docker exec``."""
        assert box.runtime_ref is not None
        res = await self._runtime.run_program(
            box.runtime_ref, script, args, stdin=stdin, timeout=timeout, output_limit=limit
        )
        return res.exit_code, res.stdout

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(
        self,
        principal: Principal,
        session_id: str,
        command: str,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: bool = False,
        tty: bool = False,
    ) -> Process:
        """Start ``command``; with ``stdin`` it reads a pipe that :meth:`write` feeds, with
        ``tty`` it runs on a terminal fed by that pipe (422 where the sandbox has no ``script``
        to open one)."""
        if not command.strip() or "\x00" in command:
            raise InvalidInput("command must be a non-empty string without NUL bytes", field="command")
        env = dict(env or {})
        validate_env(env)
        async with self._gate.enter(principal, session_id) as (sess, box):  # never beside a suspend
            command = resolve_placeholders(command, sess.state.get("assets") or {})
            assert box.runtime_ref is not None
            row = Process(tenant_id=sess.tenant_id, session_id=sess.id, sandbox_id=box.id, command=command)
            row.dir = f"{self._runtime.process_dir(box.runtime_ref)}/{row.id}"
            traceparent = current_traceparent()
            if traceparent:
                env.setdefault("TRACEPARENT", traceparent)
            exports = "".join(f"export {k}={shlex.quote(v)}; " for k, v in env.items())
            argv = ["/bin/sh", "-c", PROC_START, "sh", self._dir(box, row)]
            argv += [str(self._settings.process_output_limit), exports + command]
            argv += [
                resolve_cwd(box.workspace, cwd) or box.workspace,
                "tty" if tty else "stdin" if stdin else "",
            ]
            with span("process.start", tenant=sess.tenant_id, session=sess.id, sandbox=box.id):
                # a process of its own: the command gets the sandbox's environment, not our PATH
                if self._live and self.taps.has_room(sess.id):
                    pid = await self._start_live(box, row.id, sess.id, [*argv, "live"])
                else:
                    res = await self._runtime.exec(box.runtime_ref, ExecRequest(argv, timeout=_QUICK))
                    pid = res.stdout.strip() if res.exit_code in (0, 4) else b"!%d" % (res.exit_code or -1)
            row.pid = started_pid(pid, tty=tty)
            async with self._sessions.begin() as session:
                session.add(row)
            return row

    async def _start_live(self, box: Sandbox, process_id: str, session_id: str, argv: list[str]) -> bytes:
        """Start through an attached exec that stays to relay the output to a tap; returns
        the first line it printed (the pid, or ``!CODE``)."""
        assert box.runtime_ref is not None
        stream = await self._runtime.open_process(box.runtime_ref, argv)
        try:
            line, rest = await asyncio.wait_for(first_line(stream), _QUICK)
        except TimeoutError:
            await stream.close()
            return b"!timeout"
        except BaseException:
            await stream.close()
            raise
        if line.isdigit():
            cap = self._settings.process_output_limit + _STORED_READ  # what it may keep, and slack
            self.taps.add(process_id, stream, rest, session_id=session_id, cap=cap)
        else:
            await stream.close()
        return line

    async def _row(self, principal: Principal, session_id: str, process_id: str) -> tuple[Process, Sandbox]:
        sess, box = await self._session_service.sandbox_of(principal, session_id)
        async with self._sessions() as session:
            row = await session.get(Process, process_id)
        if row is None or row.session_id != sess.id:
            raise NotFound(f"no process {process_id!r} in session {session_id}", process_id=process_id)
        return row, box

    async def _refresh(self, row: Process, box: Sandbox) -> Process:
        """Read the process's state from the sandbox and store what changed."""
        if row.status != RUNNING:
            return row
        code, out = await self._sh(box, PROC_STATUS, self._dir(box, row))
        lines = out.decode(errors="replace").split("\n")
        if code != 0 or len(lines) < 4:
            raise SandboxStateError(f"could not read the process's status (exit {code})")
        # every figure here was written inside the sandbox: numbers in range, or nothing
        rc, alive, size = number(lines[0]), lines[1].strip() == "1", number(lines[2])
        ticks_text, _, peak_text = lines[3].partition(" ")
        ticks, peak = number(ticks_text), number(peak_text)
        row.output_bytes = size if size is not None and size >= 0 else row.output_bytes
        if alive and ticks:
            row.cpu_seconds = ticks / _CLOCK_TICKS
        if alive and peak:
            row.peak_memory_kb = max(row.peak_memory_kb or 0, peak)
        if rc is not None:
            row.status, row.exit_code = EXITED, rc
        elif not alive:
            row.status = KILLED
        if row.status != RUNNING:
            row.ended_at = utcnow()
        async with self._sessions.begin() as session:
            await session.merge(row)
        return row

    async def check(self, principal: Principal, session_id: str, process_id: str) -> None:
        """404 unless the caller may see this process (nothing is asked of the sandbox)."""
        await self._row(principal, session_id, process_id)

    async def get(self, principal: Principal, session_id: str, process_id: str) -> Process:
        row, box = await self._row(principal, session_id, process_id)
        return await self._refresh(row, box)

    async def list(self, principal: Principal, session_id: str) -> Sequence[Process]:
        sess, box = await self._session_service.sandbox_of(principal, session_id)
        async with self._sessions() as session:
            query = (
                select(Process).where(col(Process.session_id) == sess.id).order_by(col(Process.started_at))
            )
            rows = (await session.scalars(query)).all()
        return [await self._refresh(r, box) for r in rows]

    async def kill(self, principal: Principal, session_id: str, process_id: str) -> Process:
        """Kill every process of the process's session (stop, then kill, so a fork loop cannot
        outrun it), then report it."""
        row, box = await self._row(principal, session_id, process_id)
        if row.status == RUNNING and row.pid:
            with span("process.kill", session=session_id, sandbox=box.id):
                await self._sh(box, PROC_KILL, self._dir(box, row), str(row.pid))
        return await self._refresh(row, box)

    async def write(
        self, principal: Principal, session_id: str, process_id: str, data: bytes, *, eof: bool = False
    ) -> None:
        """Write ``data`` to the process's stdin, then, with ``eof``, close it. 409 when the
        process has no stdin, has ended or its stdin was closed, or when it leaves its pipe full
        for longer than a few seconds (some of ``data`` may have gone in by then)."""
        if len(data) > MAX_STDIN_BYTES:
            limit = MAX_STDIN_BYTES
            raise PayloadTooLarge(f"at most {limit} bytes of stdin per write", limit=limit)
        row, box = await self._row(principal, session_id, process_id)
        with span("process.stdin", session=session_id, sandbox=box.id):
            code, out = await self._sh(
                box, PROC_STDIN, self._dir(box, row), "1" if eof else "0", stdin=data, timeout=_STDIN_WAIT
            )
        if code is None:
            raise Conflict("the process did not read its stdin in time; part of the input may have gone in")
        if code in _STDIN_REFUSED:
            raise Conflict(_STDIN_REFUSED[code], process_id=process_id)
        if code != 0:
            raise SandboxStateError(f"could not write to the process's stdin (exit {code}): {out[-300:]!r}")

    # -- output ------------------------------------------------------------------------------

    async def read(
        self, principal: Principal, session_id: str, process_id: str, offset: int, limit: int
    ) -> tuple[bytes, Process]:
        row, box = await self._row(principal, session_id, process_id)
        row = await self._refresh(row, box)
        code, data = await self._sh(box, PROC_READ, self._dir(box, row), str(offset), str(limit), limit=limit)
        if code != 0:
            raise SandboxStateError(f"could not read the process's output (exit {code})")
        return data, row

    async def follow(
        self, principal: Principal, session_id: str, process_id: str, offset: int
    ) -> AsyncIterator[bytes]:
        """The output from ``offset`` as it is written, until the process has ended and all of
        its output was yielded. Bytes that came while the caller was busy come joined, up to
        128 KiB (a fast stream in few large pieces). The caller's pace is the stream's pace.
        A process this API process started is followed on its tap (the stored part first, then
        the relayed pieces: every relayed byte was stored first, so the hand-over loses and
        repeats nothing); what the tap does not give, from the stored output."""
        row, box = await self._row(principal, session_id, process_id)
        tap = self.taps.get(row.id)
        if tap is not None:
            async for data in self._from_tap(tap, row, box, offset):
                yield data
                offset += len(data)
        async for data in self._from_file(row, box, offset):
            yield data

    async def _from_tap(self, tap: OutputTap, row: Process, box: Sandbox, pos: int) -> AsyncIterator[bytes]:
        """From ``pos`` until the relay ends: from the tap's history when it reaches back that
        far, else the stored part first (when it is short), then the pieces as they are
        relayed. A reader that fell behind by more than it may hold joins again. It stops,
        leaving the rest to the stored output, when it is far behind what the tap keeps or at
        anything unexpected (a stored part shorter than what was relayed: a full tmpfs)."""
        while True:
            reader = tap.subscribe(pos, _HELD)
            try:
                if reader.start - pos > _STORED_READ:
                    return
                async for data in self._stored(row, box, pos, reader.start):
                    yield data
                    pos += len(data)
                if pos < reader.start:
                    return
                while (got := await reader.next(_FRAME, _LINGER)) is not None:
                    at, data = got
                    if at > pos:
                        return
                    if at + len(data) > pos:
                        piece = data[pos - at :] if pos > at else data
                        yield piece
                        pos += len(piece)
            finally:
                tap.unsubscribe(reader)
            if not reader.overflowed:
                return

    async def _stored(self, row: Process, box: Sandbox, pos: int, end: int) -> AsyncIterator[bytes]:
        """The stored output from ``pos`` up to ``end`` (or less, if it holds less), read by a
        program in the sandbox's channel, in pieces of a frame."""
        while pos < end:
            want = min(end - pos, _STORED_READ)
            code, data = await self._sh(box, PROC_READ, self._dir(box, row), str(pos), str(want), limit=want)
            if code != 0:
                raise SandboxStateError(f"could not read the process's output (exit {code})")
            if not data:
                return
            for i in range(0, len(data), _FRAME):
                yield data[i : i + _FRAME]
            pos += len(data)

    async def _from_file(self, row: Process, box: Sandbox, offset: int) -> AsyncIterator[bytes]:
        """From the stored output: of a process that is over, read (no follower); otherwise
        followed by ``PROC_FOLLOW`` in an exec of its own until it is over. The follower is
        read out as it writes, whatever the reader's pace (:class:`Drained`): a reader that
        falls behind by more than it may hold loses it, and follows again from where it is."""
        while True:
            row = await self._refresh(row, box)
            if row.status != RUNNING:
                async for data in self._stored(row, box, offset, row.output_bytes):
                    yield data
                return
            assert box.runtime_ref is not None
            stream = await self._runtime.open_process(
                box.runtime_ref, ["/bin/sh", "-c", PROC_FOLLOW, "sh", self._dir(box, row), str(offset)]
            )
            follower = Drained(stream, _HELD)
            try:
                async for data in follower.pieces(_FRAME):
                    yield data
                    offset += len(data)
            finally:
                await follower.close()
            if not follower.dropped:
                return
