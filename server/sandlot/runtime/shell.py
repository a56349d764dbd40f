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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from sandlot.domain.errors import Conflict, InvalidInput, SandboxStateError
from sandlot.observability.metrics import Metrics
from sandlot.observability.tracing import current_traceparent
from sandlot.runtime.base import ProcessStream, SandboxRuntime
from sandlot.runtime.output import CappedBuffer

__all__ = ["PersistentShell", "ShellResult", "shell_state_dir"]

log = logging.getLogger(__name__)

# $1: end token, $2: the command, $3: a W3C traceparent for the command (may be empty). The
# state directory ($__sl_S) is bound later (_BIND), when the shell knows its session: a shell
# opened while its sandbox waits in the pool has none yet.
_BOOT = r"""__sl_run() {
  (
    if [ -r "$__sl_S/env" ]; then . "$__sl_S/env"; cd "$__SL_CWD" 2>/dev/null; fi
    if [ -n "$3" ]; then export TRACEPARENT="$3"; else unset TRACEPARENT; fi
    trap '__SL_CWD=$PWD; export __SL_CWD; export -p > "$__sl_S/env"' EXIT
    eval "$2"
  ) </dev/null
  printf '\n%s %d\n' "$1" "$?"
  printf '\n%s\n' "$1" >&2
}
read -r __sl_pid __sl_rest < /proc/self/stat
printf 'ready %s\n' "$__sl_pid"
unset __sl_pid __sl_rest
"""

_BIND = '__sl_S=%s; mkdir -p "$__sl_S" 2>/dev/null\n'

# a check of the service's in a shell waiting in the pool, framed as __sl_run frames its output
_CHECK = "( eval {command} ) </dev/null; printf '\\n%s %d\\n' {token} \"$?\"; printf '\\n%s\\n' {token} >&2\n"

_EOF = object()


def shell_state_dir(runtime: SandboxRuntime, ref: str, session_id: str) -> str:
    """Where a session's shell keeps its state in the sandbox; ``env`` in it holds the saved
    cwd and exports (what a snapshot carries as the shell state)."""
    return f"{runtime.state_dir(ref)}/shell/{session_id}"


def _quote(text: str) -> str:
    """Single-quote ``text`` for sh (exact for every character but NUL)."""
    return "'" + text.replace("'", "'\"'\"'") + "'"


@dataclass(slots=True)
class ShellResult:
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_ms: float
    timed_out: bool = False
    silence_timed_out: bool = False
    truncated: bool = False


class _Framed:
    """Collects one stream of one command up to its end marker, keeping at most ``limit``."""

    __slots__ = ("_pending", "after", "buf", "done", "marker")

    def __init__(self, marker: bytes, limit: int) -> None:
        self.marker = marker
        self.buf = CappedBuffer(limit)
        self._pending = b""
        self.done = False
        self.after = b""  # what followed the marker (the exit code on stdout)

    def feed(self, data: bytes) -> None:
        if self.done:
            self.after += data
            return
        if self._pending:
            data = self._pending + data
        idx = data.find(self.marker)
        if idx >= 0:
            self.buf.write(data[:idx])
            self.after = data[idx + len(self.marker) :]
            self.done = True
            self._pending = b""
            return
        keep = len(self.marker) - 1
        if len(data) > keep:
            self.buf.write(data[:-keep])
            self._pending = data[-keep:]
        else:
            self._pending = data


class PersistentShell:
    """One attached shell; commands run one at a time (a second caller gets ``Conflict``)."""

    def __init__(
        self, runtime: SandboxRuntime, ref: str, key: str | None, metrics: Metrics | None = None
    ) -> None:
        self._runtime = runtime
        self._metrics = metrics
        self.ref = ref
        self._key = key  # None: opened in the pool, not yet a session's (see ShellManager.warm)
        self._bound = False  # whether the shell was told its state directory
        self._opening = 0  # open() and check() calls under way: a command waits for them, no Conflict
        self._stream: ProcessStream | None = None
        self._chunks: asyncio.Queue[tuple[int, bytes] | object] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.pid: int | None = None
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
        self._opening += 1
        try:
            async with self._lock:
                if self._stream is None:
                    try:
                        await self._start()
                    except BaseException:
                        await self.close()  # unopened again: a command retries on its own
                        self._chunks = asyncio.Queue()
                        raise
        finally:
            self._opening -= 1

    async def check(self, command: str, timeout: float) -> ShellResult | None:
        """Run a check of the service's (not a session's) while the shell waits in the pool,
        after its opening if it is still opening: None when it did not open, or a session's
        command runs in it. A session's command sent meanwhile waits for the check."""
        if self.ended or (self._lock.locked() and not self._opening):
            return None
        self._opening += 1
        try:
            async with self._lock:
                if self._stream is None:
                    return None
                try:
                    return await self._run(command, timeout, None, 1 << 14, "", session=False)
                except SandboxStateError:
                    self.broken = True
                    raise
        finally:
            self._opening -= 1

    async def _pump_chunks(self, stream: ProcessStream) -> None:
        try:
            while (chunk := await stream.read()) is not None:
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
        self._stream = await self._runtime.open_process(self.ref, ["/bin/sh"])
        self._pump = asyncio.create_task(self._pump_chunks(self._stream))
        await self._stream.write(_BOOT.encode())
        seen = b""
        deadline = time.monotonic() + 10
        while not (seen.startswith(b"ready ") and seen.endswith(b"\n")):
            chunk = await self._next(deadline - time.monotonic())
            if chunk is None or chunk is False:
                raise SandboxStateError("the persistent shell did not start")
            assert not isinstance(chunk, bool)
            if chunk[0] == 1:
                seen += chunk[1]
        self.pid = int(seen.split()[1])

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
        if self._lock.locked() and not self._opening:
            raise Conflict("another command is running in this session's shell; retry after it")
        async with self._lock:
            if self.broken:
                raise SandboxStateError("the persistent shell was lost")
            try:
                if self._stream is None:
                    await self._start()
                result = await self._run(command, timeout, silence_timeout, output_limit, traceparent)
                if self._metrics is not None:
                    self._metrics.command.labels("shell").observe(result.duration_ms / 1000)
                return result
            except SandboxStateError:
                self.broken = True
                raise

    def _line(self, token: str, command: str, traceparent: str, session: bool) -> str:
        if not session:  # the service's own check: no session state read or written
            return _CHECK.format(token=token, command=_quote(command))
        line = f"__sl_run {token} {_quote(command)} {_quote(traceparent)}\n"
        if not self._bound:
            line = _BIND % _quote(self.state_dir) + line
            self._bound = True
        return line

    async def _run(
        self,
        command: str,
        timeout: float,
        silence: float | None,
        limit: int,
        traceparent: str,
        *,
        session: bool = True,
    ) -> ShellResult:
        assert self._stream is not None
        started = time.monotonic()
        token = f"__SL_{secrets.token_hex(12)}"
        out = _Framed(f"\n{token} ".encode(), limit)
        err = _Framed(f"\n{token}\n".encode(), limit)
        await self._stream.write(self._line(token, command, traceparent, session).encode())
        deadline = started + timeout
        last_output = started
        timed_out = silence_hit = False
        killed_at: float | None = None
        while not (out.done and err.done and out.after.endswith(b"\n")):
            now = time.monotonic()
            if killed_at is None:
                wait = deadline - now
                if silence is not None:
                    wait = min(wait, last_output + silence - now)
            else:
                wait = killed_at + 5 - now
            chunk = await self._next(wait)
            if chunk is None:
                raise SandboxStateError("the persistent shell ended (the sandbox may have died)")
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
        code_text = out.after.strip()
        code = int(code_text) if code_text.isdigit() else None
        return ShellResult(
            exit_code=None if timed_out else code,
            stdout=out.buf.getvalue(),
            stderr=err.buf.getvalue(),
            duration_ms=(time.monotonic() - started) * 1000,
            timed_out=timed_out,
            silence_timed_out=silence_hit,
            truncated=out.buf.truncated or err.buf.truncated,
        )

    async def close(self) -> None:
        if self._pump is not None:
            self._pump.cancel()
            self._pump = None
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await self._stream.close()
            self._stream = None
