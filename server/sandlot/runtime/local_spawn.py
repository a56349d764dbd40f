"""Starting a local sandbox's command so that it holds no descriptor of the service's.

``asyncio.create_subprocess_exec`` promises ``close_fds=True``, but under uvloop (what granian
serves with) it is not kept: libuv has no such step, and uvloop hands the child's ends of its
stdio socket pairs down inheritable, so the command got them twice, as 0, 1 and 2 and again
under their own numbers, beside every inheritable descriptor of the service. A command that
put a process in the background and redirected its stdio (``setsid cmd >/dev/null 2>&1 &``)
still held the exec's output open through those copies: the exec lasted as long as the
background process, and the sandbox held descriptors of the host. Here the child is made by
:class:`subprocess.Popen`, which closes every descriptor but 0, 1 and 2 in the child whatever
loop runs, and its pipes and exit are then watched on the running loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Awaitable, Mapping, Sequence
from typing import IO, TypeVar

__all__ = ["DEVNULL", "PIPE", "Child", "spawn"]

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
_T = TypeVar("_T")
_POLL = 0.05  # how often an exit is looked for where the kernel gives no pidfd


class Child:
    """A started command: what asyncio's ``Process`` offers the local runtime (``pid``, the
    streams, ``returncode``, ``wait()``). It is reaped once it exits even if nobody waits."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self.pid = popen.pid
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self.stderr: asyncio.StreamReader | None = None
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._pidfd: int | None = None
        self._transports: list[asyncio.BaseTransport] = []
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):
            self._loop.call_later(_POLL, self._poll)
        else:
            self._loop.add_reader(self._pidfd, self._reap)

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def _reap(self) -> None:
        code = self._popen.poll()
        if code is None:
            return
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None
        if not self._exited.done():
            self._exited.set_result(code)

    def _poll(self) -> None:
        self._reap()
        if not self._exited.done():
            self._loop.call_later(_POLL, self._poll)

    async def _attach(self) -> None:
        loop = self._loop
        if self._popen.stdin is not None:
            sink = asyncio.StreamReaderProtocol(asyncio.StreamReader())
            pipe = _Pipe.taken_from(self._popen.stdin, loop)
            transport, _ = await pipe.attached(loop.connect_write_pipe(lambda: sink, pipe))
            self._transports.append(transport)
            self.stdin = asyncio.StreamWriter(transport, sink, None, loop)
        self.stdout = await self._reader(self._popen.stdout)
        self.stderr = await self._reader(self._popen.stderr)

    async def _reader(self, file: IO[bytes] | None) -> asyncio.StreamReader | None:
        if file is None:
            return None
        reader = asyncio.StreamReader(limit=1 << 16)
        protocol = asyncio.StreamReaderProtocol(reader)
        pipe = _Pipe.taken_from(file, self._loop)
        transport, _ = await pipe.attached(self._loop.connect_read_pipe(lambda: protocol, pipe))
        self._transports.append(transport)
        return reader

    def close_pipes(self) -> None:
        """Close this side of its pipes (a pipe a process that escaped the kill still holds
        would otherwise stay open here until that process ends)."""
        for transport in self._transports:
            transport.close()


class _Pipe:
    """One end of a command's pipe as the loop's pipe transport gets it, closed exactly once.
    asyncio's transport closes a pipe by calling its ``close()``; uvloop's has libuv close the
    descriptor, then calls ``close()`` as well, and a file object closed the number a second
    time. In between, another thread (a spawn's ``Popen``, a file read in a worker) could have
    been given that number, and had it closed under it (``EBADF``, or worse, its data going
    elsewhere). Here ``close()`` closes only where the loop does not."""

    def __init__(self, fd: int, *, loop_closes: bool) -> None:
        self._fd, self._loop_closes = fd, loop_closes

    @classmethod
    def taken_from(cls, file: IO[bytes], loop: asyncio.AbstractEventLoop) -> _Pipe:
        """The descriptor of ``file`` (a copy; ``file`` is closed, once, here)."""
        fd = os.dup(file.fileno())
        file.close()
        return cls(fd, loop_closes=type(loop).__module__.startswith("uvloop"))

    async def attached(self, connecting: Awaitable[_T]) -> _T:
        """``connecting`` (the loop's transport being made on this pipe); if that fails, the
        descriptor is closed as :meth:`close` does (uvloop closes what it took over itself)."""
        try:
            return await connecting
        except BaseException:
            self.close()
            raise

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0 and not self._loop_closes:
            os.close(fd)


async def spawn(
    argv: Sequence[str],
    *,
    stdin: int,
    stdout: int,
    stderr: int,
    cwd: str,
    env: Mapping[str, str],
    pass_fds: Sequence[int] = (),
) -> Child:
    """Start ``argv`` in a session of its own (``PIPE``, ``DEVNULL`` or a descriptor for each
    stream), with nothing open in it but its stdin, stdout and stderr (and ``pass_fds``)."""
    popen = await asyncio.to_thread(
        subprocess.Popen,
        list(argv),
        stdin=stdin,
        stdout=stdout,
        stderr=stderr,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
    )
    child = Child(popen)
    try:
        await child._attach()
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        child.close_pipes()
        raise
    return child
