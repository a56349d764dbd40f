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
import time
from collections.abc import AsyncIterable, Callable

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.base import Usage
from sandlot.runtime.local_spawn import Child

__all__ = [
    "LocalPty",
    "PipeStream",
    "cpu_and_memory",
    "descendants",
    "feed_pipe",
    "kill_tree",
    "kill_user",
    "killpg",
    "processes_of",
    "set_winsize",
    "usage_of",
]


async def feed_pipe(pipe: asyncio.StreamWriter | None, data: bytes | AsyncIterable[bytes] | None) -> None:
    """Write ``data`` (bytes, or a stream of them) to a process's stdin, then close it. A
    process that stopped reading ends the writing quietly; an error of ``data`` itself (a
    client gone) closes stdin too, so the process sees a short input, and is raised."""
    if pipe is None:
        return
    try:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            if data is None or isinstance(data, bytes):
                pipe.write(data or b"")
                await pipe.drain()
            else:
                async for chunk in data:
                    pipe.write(chunk)
                    await pipe.drain()
    finally:
        pipe.close()


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


def _owner(pid: int) -> int | None:
    """The user a process runs as (its /proc entry's owner: the kernel's word, not the
    process's)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b") ", 1)[1][:1] == b"Z"
    except (OSError, IndexError):
        return True  # gone


def processes_of(uid: int) -> list[int]:
    """The live processes of host user ``uid`` (zombies are dead: they only wait to be reaped)."""
    return [
        int(e) for e in os.listdir("/proc") if e.isdigit() and _owner(int(e)) == uid and not _zombie(int(e))
    ]


def kill_user(uid: int) -> None:
    """Stop, then kill, every process of host user ``uid`` (a sandbox's own), until none is
    left or a few rounds passed (a fork loop stopped first cannot outrun it)."""
    for sig in (signal.SIGSTOP, signal.SIGSTOP, signal.SIGKILL, signal.SIGKILL, signal.SIGKILL):
        for pid in processes_of(uid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
    for _ in range(50):
        if not processes_of(uid):
            return
        for pid in processes_of(uid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)


def descendants(roots: set[int]) -> set[int]:
    """``roots`` and every process descending from one of them."""
    table = _sessions_and_parents()
    found = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, (_session, parent) in table.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def cpu_and_memory(pids: set[int]) -> tuple[float, int, int]:
    """(CPU seconds used so far, resident bytes, how many) of the live processes in ``pids``."""
    ticks, pages, count = 0, 0, 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if fields[0] == b"Z":
            continue
        ticks += int(fields[11]) + int(fields[12])
        pages += int(fields[21])
        count += 1
    return ticks / os.sysconf("SC_CLK_TCK"), pages * os.sysconf("SC_PAGE_SIZE"), count


async def usage_of(pids: Callable[[], set[int]], memory_limit: int) -> Usage:
    """The CPU share (over half a second), memory and count of the processes ``pids`` gives."""
    start = time.perf_counter()
    cpu_before, _, _ = await asyncio.to_thread(lambda: cpu_and_memory(pids()))
    await asyncio.sleep(0.5)
    cpu_after, memory, count = await asyncio.to_thread(lambda: cpu_and_memory(pids()))
    elapsed = time.perf_counter() - start
    return Usage(
        cpu_percent=round(max(cpu_after - cpu_before, 0.0) / elapsed * 100, 1),
        memory_bytes=memory,
        memory_limit=memory_limit,
        processes=count,
    )


def kill_tree(root: int, include_root: bool = True, only_uid: int | None = None) -> None:
    """Kill ``root``, its process group, and every process descending from it; with
    ``include_root=False`` only its descendants; with ``only_uid``, only processes of that
    user (the pid came from a sandbox, which may not name anything else)."""
    if only_uid is not None and _owner(root) != only_uid:
        return
    doomed = descendants({root})
    if include_root and only_uid is None:
        killpg(root)
    elif not include_root:
        doomed.discard(root)
    for pid in doomed:
        if only_uid is not None and _owner(pid) != only_uid:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def set_winsize(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class LocalPty:
    """:class:`~sandlot.runtime.base.PtyStream` over a local pseudo-terminal."""

    def __init__(self, proc: Child, master: int) -> None:
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

    def __init__(self, proc: Child) -> None:
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
        self._proc.close_pipes()
