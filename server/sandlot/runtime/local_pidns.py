"""A local sandbox's own pid namespace (#27, finding 4).

Without one, a local sandbox's ``/proc`` was the host's: every other tenant's command line
(a secret in argv included) and root's ``bwrap`` lines with host paths were readable. Each
isolated sandbox gets a namespace of its own, held by a holder: ``bwrap --unshare-pid`` running
``sleep``, whose first process is the namespace's init (root's, out of the sandbox user's reach:
it reaps orphans, and its end ends everything in the namespace). Every command of the sandbox
joins that namespace (bubblewrap's ``--pidns``, with a descriptor of it the runtime keeps open)
and mounts a ``/proc`` of it, so a command sees its own sandbox's processes only, and the pids
a sandbox records for itself (a shell's ``$$``, a background process's) mean the same in every
later command of it.

The holder outlives the service (a restart must not end a sandbox's background processes): the
host pid of its init and the namespace's inode are kept in the sandbox's directory, and a
restarted service takes the namespace up again when both still agree. Host-side kills name
processes by host pid; :meth:`PidNamespaces.host_pid` turns a pid the sandbox gave into one.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

from sandlot.domain.errors import Conflict, SandboxStateError

__all__ = ["HOLDER", "PidNamespaces"]

HOLDER = "pidns"  # in a sandbox's directory: "<host pid of its init> <its inode> <init's start>"
_SLEEP = ("--", "sleep", "infinity")
_CHILD = re.compile(rb'"child-pid":\s*(\d+)')


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks since boot): with its pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/pid").st_ino
    except OSError:
        return None


class PidNamespaces:
    """The pid namespaces of one runtime's sandboxes: started on a sandbox's first command,
    taken up again after a restart, ended with the sandbox."""

    def __init__(self, bwrap: str) -> None:
        self._bwrap = bwrap
        self._held: dict[str, tuple[int, int, int]] = {}  # ref -> (descriptor, init's pid, inode)
        self._holders: dict[str, subprocess.Popen[bytes]] = {}  # those this process started
        self._ending: set[str] = set()  # being removed
        self._lock = asyncio.Lock()

    async def enter(self, ref: str, home: Path) -> int:
        """A descriptor of ``ref``'s pid namespace for a command to join (started when it has
        none, or when its init is gone): the caller's own copy, to close once the command
        started (the runtime's may be closed meanwhile, and its number given to another)."""
        try:
            held = self._held.get(ref)
            if held is None or _inode(held[1]) != held[2]:
                async with self._lock:
                    if ref in self._ending:
                        raise Conflict(f"local sandbox {ref} is being removed")
                    held = self._held.get(ref)
                    if held is None or _inode(held[1]) != held[2]:
                        self._forget(ref)
                        held = await asyncio.to_thread(self._take_or_start, ref, home)
                        self._held[ref] = held
            return os.dup(held[0])
        except OSError as exc:  # no descriptors or processes left on this host
            raise SandboxStateError(f"could not enter the sandbox's pid namespace: {exc}") from exc

    def _take_or_start(self, ref: str, home: Path) -> tuple[int, int, int]:
        """The namespace a record names when its init is still the one recorded (pid, the
        namespace's inode and the init's start time all agree, and no other sandbox holds
        it), else a new one."""
        with contextlib.suppress(OSError, ValueError):
            pid, inode, start = (int(w) for w in (home / HOLDER).read_text().split())
            taken = {held[2] for other, held in self._held.items() if other != ref}
            found = self._open(pid, inode) if _start_time(pid) == start and inode not in taken else None
            if found is not None:
                return found
        if not (home / "workspace").is_dir():  # removed meanwhile: nothing to hold
            raise SandboxStateError(f"local sandbox {ref} is gone")
        holder, info = self._start()
        found_pid = _CHILD.search(info)
        opened = self._open(int(found_pid.group(1)), None) if found_pid else None
        try:
            if opened is None:
                raise SandboxStateError(f"could not start the sandbox's pid namespace: {info[:200]!r}")
            try:
                (home / HOLDER).write_text(f"{opened[1]} {opened[2]} {_start_time(opened[1])}")
            except OSError as exc:  # the sandbox went away meanwhile
                os.close(opened[0])
                raise SandboxStateError(f"local sandbox {ref} is gone") from exc
        except SandboxStateError:
            holder.kill()
            holder.wait()
            raise
        self._holders[ref] = holder
        return opened

    def _start(self) -> tuple[subprocess.Popen[bytes], bytes]:
        """A new holder, and what bubblewrap said of it (its namespace's init's host pid)."""
        r, w = os.pipe()
        try:
            holder = subprocess.Popen(
                [self._bwrap, "--unshare-pid", "--ro-bind", "/", "/", "--info-fd", str(w), *_SLEEP],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(w,),
                start_new_session=True,
            )
        except OSError:
            os.close(r)
            raise
        finally:
            os.close(w)
        info = b""
        with open(r, "rb") as reader:  # bubblewrap writes its info, then closes it
            while chunk := reader.read(4096):
                info += chunk
        return holder, info

    @staticmethod
    def _open(pid: int, inode: int | None) -> tuple[int, int, int] | None:
        """A descriptor of ``pid``'s pid namespace, if it is ``inode`` (any, when None) and
        another than the service's own."""
        try:
            fd = os.open(f"/proc/{pid}/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        found = os.fstat(fd).st_ino
        if (inode is not None and found != inode) or found == _inode(os.getpid()):
            os.close(fd)
            return None
        return fd, pid, found

    async def host_pid(self, ref: str, home: Path, pid: int) -> int | None:
        """The host pid of the process ``ref`` knows as ``pid``, or None when it has none."""
        os.close(await self.enter(ref, home))
        return await asyncio.to_thread(self._host_pid, self._held[ref][2], pid)

    @staticmethod
    def _host_pid(inode: int, pid: int) -> int | None:
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or _inode(int(entry)) != inode:
                continue
            with contextlib.suppress(OSError), open(f"/proc/{entry}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"NSpid:"):
                        if int(line.split()[-1]) == pid:
                            return int(entry)
                        break
        return None

    @contextlib.asynccontextmanager
    async def ending(self, ref: str, home: Path) -> AsyncIterator[None]:
        """While ``ref`` is removed: its namespace ended (its init killed, so everything in it)
        and no command may start a new one until the body (the removal) is done."""
        async with self._lock:
            self._ending.add(ref)
            self._forget(ref)
            await asyncio.to_thread(self._end, ref, home)
        try:
            yield
        finally:
            self._ending.discard(ref)

    def _end(self, ref: str, home: Path) -> None:
        with contextlib.suppress(OSError, ValueError):
            pid, inode, start = (int(w) for w in (home / HOLDER).read_text().split())
            if _inode(pid) == inode and _start_time(pid) == start:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        holder = self._holders.pop(ref, None)
        if holder is not None:
            holder.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                holder.wait(timeout=5)

    def _forget(self, ref: str) -> None:
        """Let go of ``ref``'s descriptor (on the loop, where copies are made)."""
        held = self._held.pop(ref, None)
        if held is not None:
            os.close(held[0])

    def close(self) -> None:
        """Let go of every descriptor; the namespaces stay (their sandboxes do)."""
        for ref in list(self._held):
            self._forget(ref)
