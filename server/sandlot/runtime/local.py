"""The local runtime: the embedded default when no Docker engine answers.

Each sandbox is a directory on this host; commands run as processes in it. With bubblewrap
installed they run in fresh namespaces (no network unless allowed, a private /tmp, the
workspace mounted at ``/workspace``, system directories read-only, an unprivileged uid).
Without it they are plain host processes, and the service logs loudly that nothing is
isolated (and refuses to start in production mode unless allowed).

"Images" are names only here: the built-in image names and ``local`` are accepted, and all run
the host's own programs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pty
import shutil
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import IO

from sandlot.domain.errors import ImageNotFound, InvalidInput, PayloadTooLarge, SandboxStateError
from sandlot.runtime.archives import ArchiveReport
from sandlot.runtime.base import (
    ExecRequest,
    ExecResult,
    FileStream,
    LimitsHit,
    OwnedSandbox,
    SandboxSpec,
    Usage,
    WorkspaceScan,
)
from sandlot.runtime.bridge import CHUNK, consume, produce, run_blocking
from sandlot.runtime.channels import ChannelLookup, Channels
from sandlot.runtime.listing import LocalScan, list_tree
from sandlot.runtime.local_bwrap import SANDBOX_STATE, Confinement
from sandlot.runtime.local_exec import run_confined
from sandlot.runtime.local_fs import Workspace
from sandlot.runtime.local_meta import (
    META,
    empty_home,
    home_of,
    make_home,
    new_meta,
    owned_sandboxes,
    read_meta,
    uid_of,
)
from sandlot.runtime.local_pidns import PidNamespaces
from sandlot.runtime.local_procs import (
    LocalPty,
    PipeStream,
    descendants,
    kill_tree,
    kill_user,
    processes_of,
    set_winsize,
    usage_of,
)
from sandlot.runtime.local_spawn import PIPE, Child, spawn
from sandlot.runtime.local_users import claim_uid, release_uid
from sandlot.runtime.scripts import HELPER_PATH

__all__ = ["LOCAL_IMAGES", "LocalRuntime"]

LOCAL_IMAGES = frozenset({"local", "sandlot/busybox:latest", "sandlot/python:3"})
_NO_OTHER_USERS = (
    "the local runtime runs every command as the sandbox's own host user: a command cannot run "
    "as another user (`user`) here; that needs the Docker runtime"
)


class LocalRuntime:
    """:class:`~sandlot.runtime.base.SandboxRuntime` on this host's processes. Disk limits are
    not enforced here (the workspace is a directory of the host).

    Isolated means bubblewrap is there and the service runs as root: then every sandbox runs
    as a host user of its own (:mod:`~sandlot.runtime.local_users`, never another sandbox's,
    never the service's), so it can signal, trace or write nothing but its own, its process
    count is bounded, and a reset or a removal kills everything that user runs. Without root,
    sandboxes would run as the service's own user: the service says so loudly, as for no
    bubblewrap at all. How a command is confined is :mod:`~sandlot.runtime.local_bwrap`; the
    record of a sandbox is :mod:`~sandlot.runtime.local_meta`."""

    name = "local"
    disk_limits = False
    other_users = False
    relays_output = False  # closing a stream kills its process: readers follow the file

    def __init__(self, root: Path, instance: str = "default") -> None:
        self._root = root.absolute()  # bubblewrap and child processes run elsewhere
        self._instance = instance
        self._confine = Confinement.of_host()
        self._procs: dict[str, set[int]] = {}
        self._own_users = os.geteuid() == 0 and self._confine.setpriv is not None
        confined = self._confine.env_by_descriptor
        self.isolated = confined and self._own_users
        self._pidns = PidNamespaces(self._confine.bwrap) if self.isolated else None  # type: ignore[arg-type]
        self.channels = Channels()

    async def close(self) -> None:
        for ref in list(self._procs):
            self._kill_all(ref)
        if self._pidns is not None:
            self._pidns.close()

    @contextlib.asynccontextmanager
    async def _confined(
        self, ref: str, meta: Mapping[str, object], request: ExecRequest
    ) -> AsyncIterator[tuple[list[str], tuple[int, ...]]]:
        """``request``'s confined command line, and the descriptors it is given (of the
        sandbox's pid namespace, see local_pidns, and of its environment, a memory file),
        closed here once it started."""
        home = self._dir(ref)
        fds: list[int] = []
        try:
            pidns = await self._pidns.enter(ref, home) if self._pidns is not None else None
            fds += [] if pidns is None else [pidns]
            envfd = self._confine.env_file(meta, request, str(home / "workspace"))
            fds += [] if envfd is None else [envfd]
            yield self._confine.argv(home, meta, request, pidns, envfd), tuple(fds)
        finally:
            for fd in fds:
                os.close(fd)

    async def ping(self) -> None:
        self._root.mkdir(parents=True, exist_ok=True)
        self._root.chmod(0o700)  # the service's alone: sandboxes reach only their own parts

    async def image_exists(self, image: str) -> bool:
        return image in LOCAL_IMAGES

    def _dir(self, ref: str) -> Path:
        return home_of(self._root, ref)

    def ref_for(self, sandbox_id: str) -> str:
        return sandbox_id

    def _workspace(self, ref: str, workspace: str) -> Workspace:
        uid = uid_of(self._meta(ref))
        return Workspace(self._dir(ref) / "workspace", workspace, None if uid is None else (uid, uid))

    def _meta(self, ref: str) -> dict[str, object]:
        return read_meta(self._root, ref)

    async def create(self, spec: SandboxSpec) -> str:
        if spec.image not in LOCAL_IMAGES:
            raise ImageNotFound(f"the local runtime has no image {spec.image!r}", image=spec.image)
        if spec.network:
            raise InvalidInput(
                "the local runtime cannot give a sandbox network access without giving it this "
                "host's (its services on localhost included); use the Docker runtime",
                field="network",
            )
        ref = spec.sandbox_id
        await self.ping()
        uid = await asyncio.to_thread(claim_uid, self._root) if self._own_users else None
        meta = new_meta(spec, self._instance, uid)
        await asyncio.to_thread(make_home, self._dir(ref), meta, uid)
        return ref

    async def remove(self, ref: str) -> None:
        uid = None
        with contextlib.suppress(SandboxStateError):
            uid = uid_of(self._meta(ref))
        self._kill_all(ref, uid)
        async with self._pidns.ending(ref, self._dir(ref)) if self._pidns else contextlib.nullcontext():
            await asyncio.to_thread(shutil.rmtree, self._dir(ref), True)
        if uid is not None:
            release_uid(self._root, uid)

    async def is_running(self, ref: str) -> bool:
        return (self._dir(ref) / META).is_file()

    async def list_owned(self, instance: str | None = None) -> list[OwnedSandbox]:
        return await asyncio.to_thread(owned_sandboxes, self._root, instance)

    # -- commands ---------------------------------------------------------------------------

    async def exec(self, ref: str, request: ExecRequest) -> ExecResult:
        request.validate()
        if request.user is not None:  # the sandbox is one host user; there is no other to be
            raise InvalidInput(_NO_OTHER_USERS, field="user")
        meta = self._meta(ref)
        home = self._dir(ref)
        async with self._confined(ref, meta, request) as (argv, fds):
            return await run_confined(
                argv,
                request,
                cwd=self._confine.host_cwd(home, meta, request.cwd),
                env=self._confine.env(meta, request, str(home / "workspace")),
                running=self._procs.setdefault(ref, set()),
                pass_fds=fds,
            )

    def use_channels(self, lookup: ChannelLookup) -> None:
        self.channels.use(lookup)

    async def run_program(
        self,
        ref: str,
        script: str,
        args: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        timeout: float = 10.0,
        output_limit: int = 1 << 16,
    ) -> ExecResult:
        found = await self.channels.run(
            ref, script, args, stdin=stdin, timeout=timeout, output_limit=output_limit
        )
        if found is not None:
            return found
        argv = ["/bin/sh", "-c", script, "sh", *args]
        env = {"PATH": HELPER_PATH}
        return await self.exec(
            ref, ExecRequest(argv, stdin=stdin, env=env, timeout=timeout, output_limit=output_limit)
        )

    def _kill_all(self, ref: str, uid: int | None = None) -> None:
        for pid in self._procs.pop(ref, set()):
            kill_tree(pid)
        if uid is not None:
            kill_user(uid)  # what escaped the trees (setsid, double forks) is still the sandbox's

    async def _start(self, ref: str, request: ExecRequest, stdio: int) -> Child:
        """Start ``request``'s command confined, its stdin, stdout and stderr all ``stdio``
        (``PIPE``: a pipe each), as one of the sandbox's processes (a removal kills it)."""
        meta = self._meta(ref)
        host_ws = str(self._dir(ref) / "workspace")
        async with self._confined(ref, meta, request) as (argv, fds):
            proc = await spawn(
                argv,
                stdin=stdio,
                stdout=stdio,
                stderr=stdio,
                cwd=host_ws,
                env=self._confine.env(meta, request, host_ws),
                pass_fds=fds,
            )
        self._procs.setdefault(ref, set()).add(proc.pid)
        return proc

    async def open_process(
        self, ref: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> PipeStream:
        return PipeStream(await self._start(ref, ExecRequest(list(argv), env=env or {}), PIPE))

    async def open_pty(
        self, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None
    ) -> LocalPty:
        request = ExecRequest(list(argv), env={"TERM": "xterm", **(env or {})})
        master, slave = pty.openpty()
        set_winsize(master, cols, rows)
        try:
            proc = await self._start(ref, request, slave)
        finally:
            os.close(slave)
        return LocalPty(proc, master)

    def state_dir(self, ref: str) -> str:
        if self._confine.bwrap is None:
            return str(self._dir(ref) / "state")  # commands run on this host as they are
        return SANDBOX_STATE

    def process_dir(self, ref: str) -> str:
        return f"{self.state_dir(ref)}/proc"  # on this host's disk already

    async def kill_tree(self, ref: str, pid: int, *, include_root: bool = True) -> None:
        # the pid came from inside the sandbox (its own namespace's): only its own user's
        # processes may be touched
        uid = uid_of(self._meta(ref))
        if self._pidns is not None:
            found = await self._pidns.host_pid(ref, self._dir(ref), pid)
            if found is None:
                return
            pid = found
        await asyncio.to_thread(kill_tree, pid, include_root, uid)

    async def oom_killed(self, ref: str) -> bool:
        return False  # memory is bounded by prlimit: an allocation fails instead

    async def limits_hit(self, ref: str) -> LimitsHit:
        return LimitsHit()  # prlimit keeps no count of what it refused

    async def usage(self, ref: str) -> Usage:
        meta = self._meta(ref)
        uid = uid_of(meta)

        def pids() -> set[int]:  # its own host user's; without one, the trees the runtime started
            return set(processes_of(uid)) if uid is not None else descendants(self._procs.get(ref, set()))

        return await usage_of(pids, int(str(meta["memory_mb"])) << 20)

    async def reset(self, ref: str, workspace: str, *, then_shell: bool = False) -> PipeStream | None:
        await self._reset(ref)
        return await self.open_process(ref, ["/bin/sh"]) if then_shell else None

    async def _reset(self, ref: str) -> None:
        uid = uid_of(self._meta(ref))
        await asyncio.to_thread(self._kill_all, ref, uid)
        survivors = await asyncio.to_thread(processes_of, uid) if uid is not None else []
        if survivors:
            raise SandboxStateError("processes of the sandbox survived its reset")

        try:
            await asyncio.to_thread(empty_home, self._dir(ref), uid)
        except OSError as exc:
            raise SandboxStateError(f"sandbox reset failed: {exc}") from exc

    # -- files and archives (see local_fs: links are followed by hand, inside only) -----------

    async def write_file(
        self, ref: str, path: str, workspace: str, data: AsyncIterable[bytes], size: int
    ) -> None:
        self._meta(ref)
        ws = self._workspace(ref, workspace)

        def write(reader: IO[bytes]) -> None:
            with ws.open_write(path) as out:
                left = size
                while left > 0:
                    chunk = reader.read(min(left, CHUNK))
                    if not chunk:
                        raise InvalidInput(
                            f"the upload of {path!r} was cut short; nothing was written", path=path
                        )
                    out.write(chunk)
                    left -= len(chunk)

        await consume(data, write)

    async def read_file(self, ref: str, path: str, workspace: str, limit: int) -> FileStream:
        self._meta(ref)
        handle, size = await asyncio.to_thread(self._workspace(ref, workspace).open_read, path, limit)

        async def chunks() -> AsyncIterator[bytes]:
            try:
                left = size
                while left > 0 and (data := await asyncio.to_thread(handle.read, min(left, CHUNK))):
                    left -= len(data)
                    yield data
            finally:
                handle.close()

        return FileStream(size, chunks())

    async def export_workspace(self, ref: str, workspace: str, limit: int) -> AsyncIterator[bytes]:
        ws = self._workspace(ref, workspace)  # read by descriptor: a link swapped in is not followed
        if await run_blocking(ws.size) > limit:
            raise PayloadTooLarge(f"the workspace is larger than {limit} bytes", limit=limit)
        sent = 0
        async for chunk in produce(ws.export):
            sent += len(chunk)
            if sent > limit + (1 << 20):
                raise PayloadTooLarge(f"the workspace archive passed {limit} bytes", limit=limit)
            yield chunk

    @contextlib.asynccontextmanager
    async def scan_workspace(self, ref: str, workspace: str) -> AsyncIterator[WorkspaceScan]:
        self._meta(ref)
        host = self._workspace(ref, workspace).host
        yield LocalScan(host, await run_blocking(list_tree, host, self._dir(ref) / "listing-mark"))

    async def import_workspace(
        self,
        ref: str,
        workspace: str,
        archive: AsyncIterable[bytes],
        report: ArchiveReport,
        *,
        check_links: bool,
    ) -> None:
        self._meta(ref)
        ws = self._workspace(ref, workspace)  # every member is placed through the checked walk
        try:
            await consume(archive, lambda reader: ws.extract(reader, report))
        except OSError as exc:
            raise InvalidInput(f"could not unpack the archive: {exc}", field="archive") from exc

    async def pause(self, ref: str) -> tuple[int, ...]:
        self._meta(ref)  # processes here are the host's: they are not stopped
        return ()

    async def unpause(self, ref: str, keep: Sequence[int] = ()) -> None:
        self._meta(ref)
