"""The persistent shell: one long-lived ``/bin/sh`` per session, attached to the sandbox.

A ``docker exec`` costs ~50 ms; writing a line to a shell that is already attached costs well
under a millisecond. Each command is framed so its output comes back exactly:

- the shell runs it in a subshell (a fork, no exec: ~1 ms instead of ~2 ms for ``sh -c``), so
  an ``exit 3`` ends only the command, never the shell;
- the subshell first prints its pid (read from ``/proc/self/stat``) on stderr, so a timeout can
  kill it and its descendants; then it loads the session's saved cwd and exported variables,
  runs the command with ``eval``, and saves cwd and exports again on exit. The state lives in
  files inside the sandbox (on a tmpfs, never in the workspace), so any API process, and a
  restarted service, see the same state;
- after it ends the shell prints ``\\n<token> <exit code>\\n`` on stdout and ``\\n<token>\\n`` on
  stderr, where the token is random per command, so nothing a command prints can fake an end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from dataclasses import dataclass

from sandlot.domain.errors import Conflict, InvalidInput, SandboxStateError
from sandlot.runtime.base import ProcessStream, SandboxRuntime
from sandlot.runtime.output import CappedBuffer

__all__ = ["PersistentShell", "ShellManager", "ShellResult"]

log = logging.getLogger(__name__)

_BOOT = r"""S=%(state)s
mkdir -p "$S"
__sl_run() {
  (
    read -r __sl_p __sl_r < /proc/self/stat
    printf '%%s\n' "$__sl_p" >&2
    if [ -r "$S/env" ]; then . "$S/env"; cd "$__SL_CWD" 2>/dev/null; fi
    unset __sl_p __sl_r
    trap '__SL_CWD=$PWD; export __SL_CWD; export -p > "$S/env"' EXIT
    eval "$2"
  ) </dev/null
  __sl_rc=$?
  printf '\n%%s %%d\n' "$1" "$__sl_rc"
  printf '\n%%s\n' "$1" >&2
}
printf 'ready\n'
"""


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

    def __init__(self, marker: bytes, limit: int, *, pid_first: bool = False) -> None:
        self.marker = marker
        self.buf = CappedBuffer(limit)
        self._pending = b""
        self.done = False
        self.after = b""  # what followed the marker (the exit code on stdout)
        self._pid_first = pid_first
        self.pid: int | None = None

    def feed(self, data: bytes) -> None:
        if self.done:
            self.after += data
            return
        data = self._pending + data
        if self._pid_first and self.pid is None:
            head, sep, rest = data.partition(b"\n")
            if not sep:
                self._pending = data
                return
            self.pid = int(head) if head.isdigit() else -1
            data = rest
        idx = data.find(self.marker)
        if idx >= 0:
            self.buf.write(data[:idx])
            self.after = data[idx + len(self.marker) :]
            self.done = True
            self._pending = b""
            return
        keep = len(self.marker) - 1
        self.buf.write(data[:-keep] if len(data) > keep else b"")
        self._pending = data[-keep:] if len(data) > keep else data


class PersistentShell:
    """One attached shell; commands run one at a time (a second caller gets ``Conflict``)."""

    def __init__(self, runtime: SandboxRuntime, ref: str, key: str) -> None:
        self._runtime = runtime
        self._ref = ref
        self._key = key
        self._stream: ProcessStream | None = None
        self._lock = asyncio.Lock()
        self._reading: asyncio.Future[tuple[int, bytes] | None] | None = None
        self.broken = False

    @property
    def attached(self) -> bool:
        return self._stream is not None

    @property
    def state_dir(self) -> str:
        return f"{self._runtime.state_dir(self._ref)}/shell/{self._key}"

    async def _read(self, timeout: float) -> tuple[int, bytes] | bool | None:
        """Next chunk, None at EOF, or False when ``timeout`` passed with nothing."""
        assert self._stream is not None
        if self._reading is None:
            self._reading = asyncio.ensure_future(self._stream.read())
        done, _ = await asyncio.wait({self._reading}, timeout=max(timeout, 0))
        if not done:
            return False
        fut, self._reading = self._reading, None
        return fut.result()

    async def _start(self) -> None:
        self._stream = await self._runtime.open_process(self._ref, ["/bin/sh"])
        boot = _BOOT % {"state": _quote(self.state_dir)}
        await self._stream.write(boot.encode())
        seen = b""
        deadline = time.monotonic() + 10
        while not seen.endswith(b"ready\n"):
            chunk = await self._read(deadline - time.monotonic())
            if chunk is None or chunk is False:
                raise SandboxStateError("the persistent shell did not start")
            assert not isinstance(chunk, bool)
            seen += chunk[1]

    async def run(
        self,
        command: str,
        *,
        timeout: float,
        silence_timeout: float | None,
        output_limit: int,
    ) -> ShellResult:
        if "\x00" in command:
            raise InvalidInput("command contains a NUL byte", field="command")
        if self._lock.locked():
            raise Conflict("another command is running in this session's shell; retry after it")
        async with self._lock:
            if self.broken:
                raise SandboxStateError("the persistent shell was lost")
            try:
                if self._stream is None:
                    await self._start()
                return await self._run(command, timeout, silence_timeout, output_limit)
            except SandboxStateError:
                self.broken = True
                raise

    async def _run(self, command: str, timeout: float, silence: float | None, limit: int) -> ShellResult:
        assert self._stream is not None
        started = time.monotonic()
        token = f"__SL_{secrets.token_hex(12)}"
        out = _Framed(f"\n{token} ".encode(), limit)
        err = _Framed(f"\n{token}\n".encode(), limit, pid_first=True)
        await self._stream.write(f"__sl_run {token} {_quote(command)}\n".encode())
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
            chunk = await self._read(wait)
            if chunk is None:
                raise SandboxStateError("the persistent shell ended (the sandbox may have died)")
            if chunk is False:
                if killed_at is not None:
                    raise SandboxStateError("the shell did not recover after killing a command")
                timed_out = True
                silence_hit = time.monotonic() < deadline
                killed_at = time.monotonic()
                if err.pid and err.pid > 0:
                    await self._runtime.kill_tree(self._ref, err.pid)
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
        if self._reading is not None:
            self._reading.cancel()
            self._reading = None
        if self._stream is not None:
            with contextlib.suppress(Exception):
                await self._stream.close()
            self._stream = None


class ShellManager:
    """The attached shells of this process, one per session, opened on first use."""

    def __init__(self, runtime: SandboxRuntime) -> None:
        self._runtime = runtime
        self._shells: dict[str, PersistentShell] = {}

    def alive(self, session_id: str) -> bool:
        """Whether this process holds a working shell for the session. Ending a session (reset)
        or losing its sandbox kills that shell, so while it lives the session owns its sandbox."""
        shell = self._shells.get(session_id)
        return shell is not None and shell.attached and not shell.broken

    def get(self, session_id: str, ref: str) -> PersistentShell:
        shell = self._shells.get(session_id)
        if shell is None or shell.broken:
            shell = PersistentShell(self._runtime, ref, session_id)
            self._shells[session_id] = shell
        return shell

    async def close(self, session_id: str) -> None:
        shell = self._shells.pop(session_id, None)
        if shell is not None:
            await shell.close()

    async def close_all(self) -> None:
        for key in list(self._shells):
            await self.close(key)
