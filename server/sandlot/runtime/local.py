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
import errno
import json
import os
import pty
import shutil
import stat
import tarfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from sandlot.domain.errors import (
    ImageNotFound,
    InvalidInput,
    NotFound,
    PathOutsideWorkspace,
    PayloadTooLarge,
    SandboxStateError,
)
from sandlot.runtime.archives import extract_into, tar_directory
from sandlot.runtime.base import (
    LABEL_INSTANCE,
    LABEL_MANAGED,
    ExecRequest,
    ExecResult,
    OwnedSandbox,
    SandboxSpec,
)
from sandlot.runtime.local_procs import LocalPty, PipeStream, kill_tree, set_winsize
from sandlot.runtime.output import CappedBuffer

__all__ = ["LOCAL_IMAGES", "LocalRuntime"]

LOCAL_IMAGES = frozenset({"local", "sandlot/busybox:latest", "sandlot/python:3"})
_META = "sandbox.json"
_ETC = (
    "passwd",
    "group",
    "hosts",
    "nsswitch.conf",
    "resolv.conf",
    "ld.so.cache",
    "localtime",
    "alternatives",
    "ssl",
    "ca-certificates",
)


class LocalRuntime:
    """:class:`~sandlot.runtime.base.SandboxRuntime` on this host's processes."""

    name = "local"

    def __init__(self, root: Path, instance: str = "default") -> None:
        self._root = root
        self._instance = instance
        self._bwrap = shutil.which("bwrap")
        self._prlimit = shutil.which("prlimit")
        self._procs: dict[str, set[int]] = {}
        self.isolated = self._bwrap is not None

    async def close(self) -> None:
        for ref in list(self._procs):
            self._kill_all(ref)

    async def ping(self) -> None:
        self._root.mkdir(parents=True, exist_ok=True)

    async def image_exists(self, image: str) -> bool:
        return image in LOCAL_IMAGES

    def _dir(self, ref: str) -> Path:
        if not ref or "/" in ref or ref.startswith("."):
            raise NotFound(f"no local sandbox {ref!r}")
        return self._root / ref

    def _meta(self, ref: str) -> dict[str, object]:
        try:
            meta: dict[str, object] = json.loads((self._dir(ref) / _META).read_text())
        except (OSError, ValueError) as exc:
            raise SandboxStateError(f"local sandbox {ref} is gone") from exc
        return meta

    async def create(self, spec: SandboxSpec) -> str:
        if spec.image not in LOCAL_IMAGES:
            raise ImageNotFound(f"the local runtime has no image {spec.image!r}", image=spec.image)
        ref = spec.sandbox_id
        meta = {
            "labels": {LABEL_MANAGED: "1", LABEL_INSTANCE: self._instance, **spec.labels},
            "env": dict(spec.env),
            "network": spec.network,
            "workspace": spec.workspace,
            "memory_mb": spec.limits.memory_mb,
            "pids": spec.limits.pids,
        }

        def make() -> None:
            (self._dir(ref) / "workspace").mkdir(parents=True, exist_ok=False)
            (self._dir(ref) / "state").mkdir()
            (self._dir(ref) / _META).write_text(json.dumps(meta))

        await asyncio.to_thread(make)
        return ref

    async def remove(self, ref: str) -> None:
        self._kill_all(ref)
        await asyncio.to_thread(shutil.rmtree, self._dir(ref), True)

    async def is_running(self, ref: str) -> bool:
        return (self._dir(ref) / _META).is_file()

    async def list_owned(self, instance: str | None = None) -> list[OwnedSandbox]:
        def scan() -> list[OwnedSandbox]:
            found: list[OwnedSandbox] = []
            if not self._root.is_dir():
                return found
            for child in self._root.iterdir():
                try:
                    labels = json.loads((child / _META).read_text())["labels"]
                except (OSError, ValueError, KeyError):
                    continue
                if instance is None or labels.get(LABEL_INSTANCE) == instance:
                    found.append(OwnedSandbox(ref=child.name, labels=labels, running=True))
            return found

        return await asyncio.to_thread(scan)

    # -- commands ---------------------------------------------------------------------------

    def _argv(self, ref: str, meta: dict[str, object], request: ExecRequest) -> list[str]:
        host_ws = str(self._dir(ref) / "workspace")
        workspace = str(meta["workspace"])
        cwd = request.cwd or workspace
        argv: list[str] = []
        if self._prlimit is not None:
            memory = int(meta["memory_mb"]) * 1024 * 1024  # type: ignore[call-overload]
            argv += [self._prlimit, f"--as={memory}", "--"]
        if self._bwrap is None:
            return argv + request.argv()
        # No pid namespace: pids stay host pids, so kill_tree can find a command's tree.
        argv += [self._bwrap, "--die-with-parent", "--unshare-user", "--unshare-ipc"]
        argv += ["--unshare-uts", "--unshare-cgroup-try"]
        if not meta.get("network"):
            argv.append("--unshare-net")
        argv += ["--uid", "1000", "--gid", "1000"]
        for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"):
            argv += ["--ro-bind-try", d, d]
        for name in _ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        state = self.state_dir(ref)
        argv += ["--bind", host_ws, workspace, "--tmpfs", "/tmp", "--bind", state, state]
        argv += ["--proc", "/proc"]
        argv += ["--dev", "/dev", "--chdir", cwd]
        return [*argv, *request.argv()]

    def _env(self, meta: dict[str, object], request: ExecRequest, host_ws: str) -> dict[str, str]:
        home = str(meta["workspace"]) if self._bwrap else host_ws
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": home}
        env.update(dict(meta.get("env") or {}))  # type: ignore[call-overload]
        env.update(request.env)
        return env

    def _host_cwd(self, ref: str, meta: dict[str, object], cwd: str | None) -> str:
        host_ws = self._dir(ref) / "workspace"
        if self._bwrap is not None or cwd is None:
            return str(host_ws)
        return str(self._host_path(ref, str(meta["workspace"]), cwd))

    async def exec(self, ref: str, request: ExecRequest) -> ExecResult:
        start = time.perf_counter()
        meta = self._meta(ref)
        host_ws = str(self._dir(ref) / "workspace")
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(ref, meta, request),
                stdin=asyncio.subprocess.PIPE if request.stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=self._host_cwd(ref, meta, request.cwd),
                env=self._env(meta, request, host_ws),
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            return ExecResult(127, b"", f"{exc}\n".encode(), (time.perf_counter() - start) * 1000)
        self._procs.setdefault(ref, set()).add(proc.pid)
        out = CappedBuffer(request.output_limit)
        err = CappedBuffer(request.output_limit)

        async def pump(reader: asyncio.StreamReader | None, buf: CappedBuffer) -> None:
            assert reader is not None
            while chunk := await reader.read(1 << 16):
                buf.write(chunk)

        async def feed() -> None:
            if proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    proc.stdin.write(request.stdin or b"")
                    await proc.stdin.drain()
                proc.stdin.close()

        timed_out = False
        work = asyncio.gather(pump(proc.stdout, out), pump(proc.stderr, err), feed(), proc.wait())
        try:
            await asyncio.wait_for(work, timeout=request.timeout)
        except TimeoutError:
            timed_out = True
            kill_tree(proc.pid)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), timeout=2.0)
        finally:
            self._procs.get(ref, set()).discard(proc.pid)
        code = None if timed_out else proc.returncode
        if code is not None and code < 0:
            code = 128 - code  # killed by a signal: report like a shell does
        return ExecResult(
            exit_code=code,
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            duration_ms=(time.perf_counter() - start) * 1000,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
        )

    def _kill_all(self, ref: str) -> None:
        for pid in self._procs.pop(ref, set()):
            kill_tree(pid)

    async def open_process(
        self, ref: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> PipeStream:
        meta = self._meta(ref)
        request = ExecRequest(list(argv), env=env or {})
        host_ws = str(self._dir(ref) / "workspace")
        proc = await asyncio.create_subprocess_exec(
            *self._argv(ref, meta, request),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=host_ws,
            env=self._env(meta, request, host_ws),
            start_new_session=True,
        )
        self._procs.setdefault(ref, set()).add(proc.pid)
        return PipeStream(proc)

    async def open_pty(
        self, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None
    ) -> LocalPty:
        meta = self._meta(ref)
        request = ExecRequest(list(argv), env={"TERM": "xterm", **(env or {})})
        host_ws = str(self._dir(ref) / "workspace")
        master, slave = pty.openpty()
        set_winsize(master, cols, rows)
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._argv(ref, meta, request),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=host_ws,
                env=self._env(meta, request, host_ws),
                start_new_session=True,
            )
        finally:
            os.close(slave)
        self._procs.setdefault(ref, set()).add(proc.pid)
        return LocalPty(proc, master)

    def state_dir(self, ref: str) -> str:
        return str(self._dir(ref) / "state")  # bound at the same path under bubblewrap

    async def kill_tree(self, ref: str, pid: int, *, include_root: bool = True) -> None:
        await asyncio.to_thread(kill_tree, pid, include_root)

    async def reset(self, ref: str, workspace: str) -> None:
        self._kill_all(ref)
        host_ws = self._dir(ref) / "workspace"

        def empty() -> None:
            state = self._dir(ref) / "state"
            shutil.rmtree(state, ignore_errors=True)
            state.mkdir()
            for child in host_ws.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child)
                else:
                    child.unlink()

        try:
            await asyncio.to_thread(empty)
        except OSError as exc:
            raise SandboxStateError(f"sandbox reset failed: {exc}") from exc

    # -- files --------------------------------------------------------------------------------

    def _host_path(self, ref: str, workspace: str, path: str) -> Path:
        """Map an in-sandbox path under ``workspace`` to the host, refusing symlink escapes."""
        host_ws = (self._dir(ref) / "workspace").resolve()
        rel = os.path.relpath(path, workspace)
        candidate = host_ws / rel
        real = candidate.resolve()
        if real != host_ws and host_ws not in real.parents:
            raise PathOutsideWorkspace(f"path {path!r} resolves outside the workspace", path=path)
        return real

    async def write_file(self, ref: str, path: str, data: bytes, workspace: str) -> None:
        self._meta(ref)
        target = self._host_path(ref, workspace, path)

        def write() -> None:
            if target.is_dir():
                raise InvalidInput(f"{path!r} is a directory", path=path)
            target.parent.mkdir(parents=True, exist_ok=True)
            self._host_path(ref, workspace, path)  # re-check after creating parents
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
            try:
                fd = os.open(target, flags, 0o644)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise PathOutsideWorkspace(f"{path!r} is a symlink", path=path) from exc
                raise InvalidInput(f"could not write {path!r}: {exc.strerror}", path=path) from exc
            with os.fdopen(fd, "wb") as f:
                f.write(data)

        await asyncio.to_thread(write)

    async def export_workspace(self, ref: str, workspace: str, limit: int) -> bytes:
        self._meta(ref)
        data = await asyncio.to_thread(tar_directory, self._dir(ref) / "workspace")
        if len(data) > limit:
            raise PayloadTooLarge(f"the workspace archive is over {limit} bytes")
        return data

    async def import_workspace(self, ref: str, workspace: str, archive: bytes) -> None:
        self._meta(ref)
        try:
            await asyncio.to_thread(extract_into, self._dir(ref) / "workspace", archive)
        except (tarfile.TarError, OSError) as exc:
            raise InvalidInput(f"could not unpack the archive: {exc}") from exc

    async def pause(self, ref: str) -> None:
        self._meta(ref)  # nothing runs between commands here: the shells were closed

    async def unpause(self, ref: str) -> None:
        self._meta(ref)

    async def read_file(self, ref: str, path: str, workspace: str, limit: int) -> bytes:
        self._meta(ref)
        target = self._host_path(ref, workspace, path)

        def read() -> bytes:
            try:
                fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
            except FileNotFoundError as exc:
                raise NotFound(f"no file at {path!r}", path=path) from exc
            except OSError as exc:
                raise InvalidInput(f"could not read {path!r}: {exc.strerror}", path=path) from exc
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise InvalidInput(f"{path!r} is not a regular file", path=path)
                if info.st_size > limit:
                    raise PayloadTooLarge(f"{path!r} is larger than {limit} bytes", path=path)
                return f.read(limit + 1)[:limit]

        return await asyncio.to_thread(read)
