"""A Sandlot server as a real process, for the tests that need one: started on a free port
(``sandlot serve`` or a command that ends in it, such as the README's start script), waited for
until it is ready, stopped by its pid, or by its process group when it has one of its own (its
workers, or the children of a start script, go with it), whatever happens. One process per
``Server`` at a time; ``start`` again after ``stop`` restarts it on the same port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import httpx
import pytest

from tests.conftest import INSTANCE

__all__ = ["READY", "SERVE", "Ready", "Server", "answers", "free_port", "logs"]

SERVE = (sys.executable, "-m", "sandlot", "serve")
"""The default command: ``sandlot serve`` from this interpreter."""

Ready = Callable[["Server"], bool]
"""Whether a started server is ready yet; asked again until it says so or the time is up."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(path: str) -> Ready:
    """Ready once ``GET path`` answers 200."""

    def ready(server: Server) -> bool:
        try:
            return httpx.get(f"{server.url}{path}", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    return ready


def logs(text: str) -> Ready:
    """Ready once the server's log contains ``text`` (it says so itself)."""

    def ready(server: Server) -> bool:
        return server.log is not None and text.encode() in server.log.read_bytes()

    return ready


READY = answers("/readyz")
"""The default: ready once /readyz answers 200 (the store and the runtime answer too)."""


class Server:
    """One server process. Use it as a context manager (started and ready on entry, stopped on
    exit) or call ``start`` and ``stop`` (a test that kills and restarts it).

    Args:
        settings: variables (SANDLOT_* and the like) over ``environ``, which defaults to this
            process's environment. The port is chosen here and goes in SANDLOT_PORT, or with
            ``port_as_arg`` as ``--port N`` after ``command`` and ``args``.
        log: where its output goes (read it when a test fails); None discards it. With
            ``pipe_stdout`` only stderr goes there, and stdout is ``self.stdout`` (text) for a
            test that reads what the server announces.
        new_session: start it as a process group of its own and signal the whole group (for a
            process whose children must go with it).
        ready: what ``start`` waits for, up to ``timeout`` seconds; None waits for nothing.
        grace: how long ``stop`` waits after its signal before SIGKILL.
    """

    def __init__(
        self,
        settings: Mapping[str, str],
        log: Path | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        command: Sequence[str] = SERVE,
        args: Sequence[str] = (),
        cwd: Path | None = None,
        port_as_arg: bool = False,
        pipe_stdout: bool = False,
        new_session: bool = False,
        ready: Ready | None = READY,
        timeout: float = 60,
        grace: float = 30,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        port_setting = {} if port_as_arg else {"SANDLOT_PORT": str(self.port)}
        self.env = {**(os.environ if environ is None else environ), **settings, **port_setting}
        self.argv = [*command, *args, *(["--port", str(self.port)] if port_as_arg else [])]
        self.cwd = cwd
        self.pipe_stdout = pipe_stdout
        self.new_session = new_session
        self.ready = ready
        self.timeout = timeout
        self.grace = grace
        self.proc: subprocess.Popen[str] | None = None
        self._out: IO[bytes] | None = None
        self._starts = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    @property
    def stdout(self) -> IO[str]:
        assert self.proc is not None and self.proc.stdout is not None, "not started with pipe_stdout"
        return self.proc.stdout

    def start(self, *, wait: bool = True) -> Server:
        """Start the process (and, unless ``wait`` is false, wait until it is ready)."""
        assert self.proc is None, "already started"
        if self.log is not None:  # a restart adds to the first run's log
            self._out = self.log.open("ab" if self._starts else "wb")
        self._starts += 1
        out: IO[bytes] | int = subprocess.DEVNULL if self._out is None else self._out
        self.proc = subprocess.Popen(
            self.argv,
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE if self.pipe_stdout else out,
            stderr=out if self.pipe_stdout or self._out is None else subprocess.STDOUT,
            text=True,
            start_new_session=self.new_session,
        )
        if wait:
            try:
                self.wait_ready()
            except BaseException:
                self.stop()
                raise
        return self

    def wait_ready(self) -> None:
        """Wait for ``ready``; fail the test if it does not come or the process ends first."""
        assert self.proc is not None, "not started"
        if self.ready is None:
            return
        deadline = time.monotonic() + self.timeout
        while not self.ready(self):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                said = "" if self.log is None else self.log.read_text(errors="replace")[-3000:]
                pytest.fail(f"{' '.join(self.argv)} did not come up on {self.url}:\n{said}")
            time.sleep(0.2)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig``; SIGKILL if it has not ended ``grace`` seconds later. A no-op when it is
        not running."""
        if self.proc is None:
            return
        try:
            self._signal(sig)
            try:
                self.proc.wait(timeout=self.grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait()
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            if self._out is not None:
                self._out.close()
            self.proc, self._out = None, None

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        if not self.new_session:
            self.proc.send_signal(sig)  # nothing once it has been reaped
            return
        with contextlib.suppress(ProcessLookupError):  # the whole group has ended
            os.killpg(self.proc.pid, sig)  # its own group: the leader's pid is the group's id

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


RESTART_INSTANCE = f"{INSTANCE}-rs"


def restartable_server(pg_url: str, data_dir: Path) -> Server:
    """``sandlot serve`` in its own process group, so SIGKILL takes the workers with it."""
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": RESTART_INSTANCE,
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
    }
    return Server(settings, new_session=True, grace=20)
