"""The persistent shell: one long-lived ``/bin/sh`` per session, attached to the sandbox.

A ``docker exec`` costs ~50 ms; writing a line to a shell that is already attached costs well
under a millisecond. Each command is framed so its output comes back exactly:

- the shell runs it in a subshell (a fork, no exec), so an ``exit 3`` ends only the command,
  never the shell. The shell reports its own pid once at start; since it runs one command at a
  time, a timeout kills every descendant of the shell and spares the shell;
- the subshell loads the session's saved cwd and exported variables, runs the command with
  ``eval``, and saves cwd and exports again on exit. The state lives in files inside the
  sandbox (on a tmpfs, never in the workspace), so any API process, and a restarted service,
  see the same state;
- after it ends the shell prints ``\\n<token> <exit code>\\n`` on stdout and ``\\n<token>\\n`` on
  stderr, where the token is random per command, so nothing a command prints can fake an end.

A reader task moves the attached stream's chunks into a queue; the command loop waits on the
queue with a deadline, so a timeout never cancels a read half-way through a frame.

The same shell is the sandbox's channel for the service's own programs (:meth:`program`: file
reads and writes, process bookkeeping, checks): between session commands, each in a subshell
with the helper PATH and none of the session's state, its input sent raw once the shell asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sandlot.domain.errors import Conflict, InvalidInput, SandboxStateError
from sandlot.observability.metrics import Metrics
from sandlot.observability.tracing import current_traceparent
from sandlot.runtime.base import ExecResult, ProcessStream, SandboxRuntime
from sandlot.runtime.channels import INLINE_MAX
from sandlot.runtime.output import Framed, decode_output
from sandlot.runtime.shell_boot import BIND, BOOT, SPOOL_FAILED

__all__ = ["PersistentShell", "ShellResult", "shell_state_dir"]

log = logging.getLogger(__name__)

#: How long a program waits for the shell to be free before the caller runs it another way.
_IDLE_WAIT = 1.0

_EOF = object()
_LOST = "the persistent shell ended (the sandbox may have died)"


def shell_state_dir(runtime: SandboxRuntime, ref: str, session_id: str) -> str:
    """Where a session's shell keeps its state in the sandbox; ``env`` in it holds the saved
    cwd and exports (what a snapshot carries as the shell state)."""
    return f"{runtime.state_dir(ref)}/shell/{session_id}"


@dataclass(slots=True)
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_ms: float
    timed_out: bool = False
    silence_timed_out: bool = False
    truncated: bool = False


class PersistentShell:
    """One attached shell. A session's commands run one at a time (a second caller gets
    ``Conflict``); the service's own programs run between them (:meth:`program`), and a
    command sent while one of those runs, or while the shell opens, waits for it."""

    def __init__(
        self,
        runtime: SandboxRuntime,
        ref: str,
        key: str | None,
        metrics: Metrics | None = None,
        *,
        started: ProcessStream | None = None,
    ) -> None:
        """``started``: a ``/bin/sh`` already running in the sandbox (a reset that became the
        next session's shell, see ``SandboxRuntime.reset``), booted instead of opening one."""
        self._started = started
        self._runtime = runtime
        self._metrics = metrics
        self.ref = ref
        self._key = key  # None: opened in the pool, not yet a session's (see ShellManager.warm)
        self._bound = False  # whether the shell was told its state directory
        self._commands = 0  # a session's commands running or waiting (the second is refused)
        self._stream: ProcessStream | None = None
        self._chunks: asyncio.Queue[tuple[int, bytes] | object] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.pid: int | None = None
        self.takes_input = False  # whether programs can be given input here (head and cat are there)
        self.runs_oneshots = False  # whether ONE_SHOT can run here (setsid, mkfifo and sleep)
        self.broken = False

    @property
    def attached(self) -> bool:
        return self._stream is not None

    @property
    def ended(self) -> bool:
        """Whether the attached stream has ended (the sandbox was reset, stopped or lost)."""
        return self.broken or (self._pump is not None and self._pump.done())

    @property
    def state_dir(self) -> str:
        assert self._key is not None, "a pooled shell has no state until a session adopts it"
        return shell_state_dir(self._runtime, self.ref, self._key)

    def on_end(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the attached stream ends (at once if it has)."""
        assert self._pump is not None, "only an opened shell has a stream to end"
        self._pump.add_done_callback(lambda _: callback())

    def adopt(self, key: str) -> None:
        """Make a shell opened in the pool the session ``key``'s; its state directory is bound
        with its first command (no round trip of its own)."""
        self._key = key

    async def open(self) -> None:
        """Attach now rather than at the first command (a command sent meanwhile waits)."""
        async with self._lock:
            if self._stream is None:
                try:
                    await self._start()
                except BaseException:
                    await self.close()  # unopened again: a command retries on its own
                    self._chunks = asyncio.Queue()
                    raise

    @property
    def idle(self) -> bool:
        """Whether a program could run now: attached, alive, and no session command in it."""
        return self._stream is not None and not self.ended and not self._commands

    async def program(
        self,
        script: str,
        args: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        timeout: float,
        output_limit: int = 1 << 16,
        wait: float = _IDLE_WAIT,
        own_env: bool = False,
        open_first: bool = False,
        once: bool = False,
    ) -> ExecResult | None:
        """Run a program of the service's (``sh -c script sh args...``) in this shell, as the
        sandbox user, with the helper PATH (``own_env``: the sandbox's own environment, for a
        tenant's one-shot command) and none of a session's state; ``stdin`` (up to
        :data:`INLINE_MAX`) is sent raw once the shell asks for it. None when it cannot run
        here now: the shell is not open (``open_first``: it is opened, if free) or has ended, a
        session's command runs or waits in it, another program keeps it busy longer than
        ``wait``, or it cannot take the input (no ``head``, or no room on the state tmpfs);
        the caller runs it elsewhere. A program still running at ``timeout`` is killed
        (``timed_out``), the shell lives on. ``once``: a shell lost once it was sent raises
        ``SandboxStateError`` (it may have run: a tenant's one-shot must never run twice)."""
        if self.ended or self._commands or (self._stream is None and not open_first):
            return None
        if stdin is not None and len(stdin) > INLINE_MAX:
            return None
        if "\x00" in script or any("\x00" in a for a in args):
            raise InvalidInput("a program's arguments cannot hold NUL bytes")
        try:
            async with asyncio.timeout(wait):
                await self._lock.acquire()
        except TimeoutError:
            return None
        line = None  # once made, it is sent: the program may run
        try:
            if self._commands or self.broken:
                return None
            if self._stream is None:
                await self._start()
            if (stdin is not None and not self.takes_input) or (own_env and not self.runs_oneshots):
                return None
            line = self._program_line(script, args, stdin, "own" if own_env else "ours")
            res = await self._run(line, timeout, None, output_limit, payload=stdin)
        except SandboxStateError:
            self.broken = True
            if once and line is not None:
                raise
            return None  # the shell is lost; the caller's own process finds out about the sandbox
        finally:
            self._lock.release()
        if stdin is not None and res.exit_code == 125 and res.stderr.endswith(SPOOL_FAILED + b"\n"):
            return None  # its input or its pipes could not be put down (the state tmpfs is full)
        return ExecResult(
            res.exit_code, res.stdout, res.stderr, res.duration_ms, res.timed_out, res.truncated
        )

    def _program_line(
        self, script: str, args: Sequence[str], stdin: bytes | None, mode: str
    ) -> Callable[[str], bytes]:
        spool = f"{self._runtime.state_dir(self.ref)}/in" if stdin is not None else ""
        count = str(len(stdin)) if stdin is not None else ""
        words = " ".join(shlex.quote(a) for a in (spool, count, mode, script, *args))
        return lambda token: f"__sl_do {token} {words}\n".encode()

    async def _pump_chunks(self, stream: ProcessStream) -> None:
        """Queue the stream's chunks while a command or program is framed (the lock is held);
        what comes between them (a background process of an earlier command still writing)
        belongs to no frame and is dropped: it cannot pile up here while the shell is idle."""
        try:
            while (chunk := await stream.read()) is not None:
                if self._lock.locked():
                    self._chunks.put_nowait(chunk)
        except SandboxStateError as exc:
            log.info("persistent shell %s lost its stream: %s", self._key, exc)
        finally:
            self._chunks.put_nowait(_EOF)

    async def _next(self, timeout: float) -> tuple[int, bytes] | bool | None:
        """The next chunk, None at EOF, or False when ``timeout`` passed with nothing."""
        try:
            item = self._chunks.get_nowait()
        except asyncio.QueueEmpty:
            try:
                async with asyncio.timeout(max(timeout, 0)):
                    item = await self._chunks.get()
            except TimeoutError:
                return False
        if item is _EOF:
            self._chunks.put_nowait(_EOF)  # stays at EOF
            return None
        return item  # type: ignore[return-value]

    async def _start(self) -> None:
        started, self._started = self._started, None
        self._stream = started or await self._runtime.open_process(self.ref, ["/bin/sh"])
        self._pump = asyncio.create_task(self._pump_chunks(self._stream))
        await self._stream.write(BOOT.encode())
        seen, said = b"", b""
        deadline = time.monotonic() + 10
        while not (seen.startswith(b"ready ") and seen.endswith(b"\n")):
            chunk = await self._next(deadline - time.monotonic())
            if chunk is None or chunk is False:  # what it printed says why (a runtime's refusal)
                how = "ended" if chunk is None else "gave no answer in 10 s"
                raise SandboxStateError(f"the persistent shell did not start: it {how} ({said!r})")
            assert not isinstance(chunk, bool)  # only the tail of what it said is kept
            seen, said = (seen + chunk[1], said) if chunk[0] == 1 else (seen, (said + chunk[1])[-300:])
            if len(seen) > 4096:  # the ready line is short: this is not our shell talking
                raise SandboxStateError(f"the persistent shell did not start: {seen[:200]!r}")
        words = seen.split()
        self.pid = int(words[1])
        self.takes_input = b"in" in words[2:]
        self.runs_oneshots = b"x" in words[2:]

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        silence_timeout: float | None,
        output_limit: int,
        traceparent: str | None = None,
    ) -> ShellResult:
        """Run ``command``; ``traceparent`` (default: the current span's) is exported to it as
        ``TRACEPARENT`` so a program inside can continue the trace."""
        if traceparent is None:
            traceparent = current_traceparent()
        if "\x00" in command:
            raise InvalidInput("command contains a NUL byte", field="command")
        if self._commands:
            raise Conflict("another command is running in this session's shell; retry after it")
        self._commands += 1
        try:
            async with self._lock:
                if self.broken:
                    raise SandboxStateError("the persistent shell was lost")
                try:
                    if self._stream is None:
                        await self._start()
                    line = self._command_line(command, traceparent)
                    result = await self._run(line, timeout, silence_timeout, output_limit)
                    if self._metrics is not None:
                        self._metrics.command.labels("shell").observe(result.duration_ms / 1000)
                    return result
                except SandboxStateError:
                    self.broken = True
                    raise
        finally:
            self._commands -= 1

    def _command_line(self, command: str, traceparent: str) -> Callable[[str], bytes]:
        words = f"{shlex.quote(command)} {shlex.quote(traceparent)}"
        bind = ""
        if not self._bound:
            bind = BIND % shlex.quote(self.state_dir)
            self._bound = True
        return lambda token: f"{bind}__sl_run {token} {words}\n".encode()

    async def _run(
        self,
        line: Callable[[str], bytes],
        timeout: float,
        silence: float | None,
        limit: int,
        *,
        payload: bytes | None = None,
    ) -> ShellResult:
        """Send ``line`` (for the frame's token), collect the frame; ``payload`` when asked."""
        assert self._stream is not None
        started = time.monotonic()
        token = f"__SL_{secrets.token_hex(12)}"
        out = Framed(f"\n{token} ".encode(), limit)
        err = Framed(f"\n{token}\n".encode(), limit)
        await self._stream.write(line(token))
        deadline = started + timeout
        if payload is not None:
            await self._send_when_asked(b"go %s\n" % token.encode(), payload, deadline, out, err)
        last_output = started
        timed_out = silence_hit = False
        killed_at: float | None = None
        while not (out.done and err.done and out.line is not None):
            now = time.monotonic()
            if killed_at is None:
                wait = deadline - now
                if silence is not None:
                    wait = min(wait, last_output + silence - now)
            else:
                wait = killed_at + 5 - now
            chunk = await self._next(wait)
            if chunk is None:  # with what the command had printed
                raise SandboxStateError(_LOST, **decode_output(out.so_far(), err.so_far()))
            if chunk is False:
                if killed_at is not None:
                    raise SandboxStateError("the shell did not recover after killing a command")
                timed_out = True
                silence_hit = time.monotonic() < deadline
                killed_at = time.monotonic()
                if self.pid:
                    await self._runtime.kill_tree(self.ref, self.pid, include_root=False)
                continue
            assert not isinstance(chunk, bool)
            last_output = time.monotonic()
            (out if chunk[0] == 1 else err).feed(chunk[1])
        code_text = (out.line or b"").strip()
        code = int(code_text) if code_text.isdigit() else None
        while not self._chunks.empty():  # what came after the frame belongs to none (EOF stays)
            if self._chunks.get_nowait() is _EOF:
                self._chunks.put_nowait(_EOF)
                break
        return ShellResult(
            exit_code=None if timed_out else code,
            stdout=out.buf.getvalue(),
            stderr=err.buf.getvalue(),
            duration_ms=(time.monotonic() - started) * 1000,
            timed_out=timed_out,
            silence_timed_out=silence_hit,
            truncated=out.buf.truncated or err.buf.truncated,
        )

    async def _send_when_asked(
        self, go: bytes, payload: bytes, deadline: float, out: Framed, err: Framed
    ) -> None:
        """Send a program's input once the shell asks (``go``); nothing past the deadline."""
        assert self._stream is not None
        asked = b""
        while not asked.startswith(go):
            chunk = await self._next(deadline - time.monotonic())
            if chunk is None:
                raise SandboxStateError(_LOST)
            if chunk is False:
                return
            assert not isinstance(chunk, bool)
            if chunk[0] == 1:
                asked += chunk[1]
            else:
                err.feed(chunk[1])
        await self._stream.write(payload)
        out.feed(asked[len(go) :])

    async def retire(self) -> None:
        """Close the shell for good: a caller waiting to send a command gets SandboxStateError."""
        self.broken = True
        await self.close()

    async def close(self) -> None:
        if self._started is not None:
            await self._started.close()
            self._started = None
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await self._stream.close()
            self._stream = None
