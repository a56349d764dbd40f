"""Processes of the local runtime: killing a tree, and the attached streams (pipes for the
persistent shell, a pseudo-terminal for terminals)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import struct
import termios

from sandlot.domain.errors import SandboxStateError

__all__ = ["LocalPty", "PipeStream", "kill_tree", "killpg", "set_winsize"]


def killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _sessions_and_parents() -> dict[int, tuple[int, int]]:
    """pid -> (session id, parent pid) of every host process."""
    found: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        found[int(entry)] = (int(fields[3]), int(fields[1]))
    return found


def kill_tree(root: int, include_root: bool = True) -> None:
    """Kill ``root``, its process group, and every process descending from it; with
    ``include_root=False`` only its descendants."""
    table = _sessions_and_parents()
    doomed = {root}
    grew = True
    while grew:
        grew = False
        for pid, (_session, parent) in table.items():
            if parent in doomed and pid not in doomed:
                doomed.add(pid)
                grew = True
    if include_root:
        killpg(root)
    else:
        doomed.discard(root)
    for pid in doomed:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalPty:
    """:class:`~sandlot.runtime.base.PtyStream` over a local pseudo-terminal."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self._proc = proc
        self._master = master
        self._loop = asyncio.get_running_loop()

    async def write(self, data: bytes) -> None:
        await self._loop.run_in_executor(None, os.write, self._master, data)

    async def read(self) -> bytes | None:
        try:
            data = await self._loop.run_in_executor(None, os.read, self._master, 65536)
        except OSError:  # EIO: the other side closed
            return None
        return data or None

    async def resize(self, cols: int, rows: int) -> None:
        set_winsize(self._master, cols, rows)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGWINCH)

    async def close(self) -> None:
        kill_tree(self._proc.pid)
        with contextlib.suppress(OSError):
            os.close(self._master)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._proc.wait(), timeout=2.0)


class PipeStream:
    """:class:`~sandlot.runtime.base.ProcessStream` over a local subprocess's pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._proc = proc
        self._queue: asyncio.Queue[tuple[int, bytes] | None] = asyncio.Queue()
        self._open = 2
        self._tasks = [
            asyncio.ensure_future(self._pump(1, proc.stdout)),
            asyncio.ensure_future(self._pump(2, proc.stderr)),
        ]

    async def _pump(self, fd: int, reader: asyncio.StreamReader | None) -> None:
        assert reader is not None
        while chunk := await reader.read(1 << 16):
            await self._queue.put((fd, chunk))
        await self._queue.put(None)

    async def write(self, data: bytes) -> None:
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(data)
            await self._proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise SandboxStateError("the sandbox process is gone") from exc

    async def read(self) -> tuple[int, bytes] | None:
        while self._open:
            item = await self._queue.get()
            if item is not None:
                return item
            self._open -= 1
        return None

    async def close(self) -> None:
        kill_tree(self._proc.pid)
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(ProcessLookupError):
            await self._proc.wait()
