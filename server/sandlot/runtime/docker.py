"""The Docker runtime: one container per sandbox, driven through aiodocker.

Containers are created locked down (no capabilities, no-new-privileges, no network unless
allowed, memory/cpu/pids limits, an init process to reap orphans) and carry our labels so a
restarted service can find them. Files move through the archive API; commands through
``docker exec`` wrapped so that their whole process tree can be killed on timeout.
"""

from __future__ import annotations

import asyncio
import io
import logging
import posixpath
import tarfile
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import aiodocker
from aiodocker.stream import Stream

from sandlot.domain.errors import (
    ImageNotFound,
    InvalidInput,
    NotFound,
    PathOutsideWorkspace,
    PayloadTooLarge,
    RuntimeUnavailable,
    SandboxStateError,
)
from sandlot.runtime.archives import strip_first_component
from sandlot.runtime.base import (
    LABEL_INSTANCE,
    LABEL_MANAGED,
    ExecRequest,
    ExecResult,
    OwnedSandbox,
    SandboxSpec,
)
from sandlot.runtime.docker_streams import ExecStream, PtyExecStream, send_stdin
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.scripts import (
    KILL_SESSION,
    KILL_TREE,
    OOM_COUNT,
    REPORT_PID_AND_EXEC,
    RESET_SANDBOX,
    RESOLVE_PATH,
    STATE_ROOT,
)

__all__ = ["DockerRuntime"]

log = logging.getLogger(__name__)

_KEEPALIVE = ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600; done"]
_SIGKILL_EXIT = 137


def _unavailable(exc: Exception) -> RuntimeUnavailable:
    return RuntimeUnavailable(f"docker engine unreachable: {exc}")


class _Resolved(NamedTuple):
    existing: str
    tail: str
    kind: str
    size: int
    uid: int
    gid: int


class DockerRuntime:
    """:class:`~sandlot.runtime.base.SandboxRuntime` on a Docker engine."""

    name = "docker"
    isolated = True

    def __init__(self, url: str | None = None, instance: str = "default") -> None:
        self._url = url
        self._instance = instance
        self._client: aiodocker.Docker | None = None
        self._oom_seen: dict[str, int] = {}

    @property
    def docker(self) -> aiodocker.Docker:
        if self._client is None:
            self._client = aiodocker.Docker(url=self._url)
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def ping(self) -> None:
        try:
            await self.docker.version()
        except (OSError, aiodocker.DockerError) as exc:
            raise _unavailable(exc) from exc

    async def image_exists(self, image: str) -> bool:
        try:
            await self.docker.images.inspect(image)
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                return False
            raise _unavailable(exc) from exc
        except OSError as exc:
            raise _unavailable(exc) from exc
        return True

    def _config(self, spec: SandboxSpec) -> dict[str, Any]:
        labels = {LABEL_MANAGED: "1", LABEL_INSTANCE: self._instance, **spec.labels}
        host: dict[str, Any] = {
            "Memory": spec.limits.memory_mb * 1024 * 1024,
            "MemorySwap": spec.limits.memory_mb * 1024 * 1024,
            "NanoCpus": int(spec.limits.cpus * 1e9),
            "PidsLimit": spec.limits.pids,
            "CapDrop": ["ALL"],
            "SecurityOpt": ["no-new-privileges"],
            "NetworkMode": "bridge" if spec.network else "none",
            "ReadonlyRootfs": spec.read_only_root,
            "Init": True,
            "Mounts": [],
        }
        if spec.read_only_root:
            host["Tmpfs"] = {"/tmp": "rw,nosuid,nodev,size=64m"}
            host["Mounts"].append(
                {
                    "Type": "volume",
                    "Target": spec.workspace,
                    "VolumeOptions": {"Labels": labels},
                }
            )
        return {
            "Image": spec.image,
            "Cmd": _KEEPALIVE,
            "Env": [f"{k}={v}" for k, v in spec.env.items()],
            "WorkingDir": spec.workspace,
            "Labels": labels,
            "HostConfig": host,
            "NetworkDisabled": not spec.network,
            "StopTimeout": 1,
        }

    async def create(self, spec: SandboxSpec) -> str:
        if not await self.image_exists(spec.image):
            raise ImageNotFound(f"image {spec.image!r} is not available", image=spec.image)
        try:
            container = await self.docker.containers.create(
                self._config(spec), name=f"sandlot-{spec.sandbox_id}"
            )
            try:
                await container.start()
            except aiodocker.DockerError:
                await container.delete(force=True, v=True)
                raise
        except aiodocker.DockerError as exc:
            raise SandboxStateError(f"could not start container: {exc.message}") from exc
        except OSError as exc:
            raise _unavailable(exc) from exc
        try:  # readiness: the sandbox must be able to run our shell
            probe = await self._run_quick(container.id, ["/bin/sh", "-c", "true"])
            if probe.exit_code != 0:
                raise SandboxStateError(f"readiness probe exited with {probe.exit_code}")
        except (SandboxStateError, TimeoutError, aiodocker.DockerError) as exc:
            await self.remove(container.id)
            raise SandboxStateError(f"sandbox did not become ready: {exc}") from exc
        self._oom_seen[container.id] = 0
        return container.id

    async def remove(self, ref: str) -> None:
        self._oom_seen.pop(ref, None)
        try:
            await self.docker.containers.container(ref).delete(force=True, v=True)
        except aiodocker.DockerError as exc:
            if exc.status not in (404, 409):
                raise _unavailable(exc) from exc
        except OSError as exc:
            raise _unavailable(exc) from exc

    async def is_running(self, ref: str) -> bool:
        try:
            info = await self.docker.containers.container(ref).show()
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                return False
            raise _unavailable(exc) from exc
        except OSError as exc:
            raise _unavailable(exc) from exc
        return bool(info["State"]["Running"])

    async def list_owned(self, instance: str | None = None) -> list[OwnedSandbox]:
        filters = [f"{LABEL_MANAGED}=1"]
        if instance is not None:
            filters.append(f"{LABEL_INSTANCE}={instance}")
        try:
            found = await self.docker.containers.list(all=True, filters={"label": filters})
        except (OSError, aiodocker.DockerError) as exc:
            raise _unavailable(exc) from exc
        return [
            OwnedSandbox(
                ref=c.id,
                labels=c._container.get("Labels") or {},
                running=c._container.get("State") in ("running", "paused"),  # paused: suspended
            )
            for c in found
        ]

    # -- commands ---------------------------------------------------------------------------

    async def _run_quick(self, ref: str, argv: list[str], limit_s: float = 10.0) -> ExecResult:
        """Run a helper command of ours (no pid wrapper, no tree kill)."""
        start = time.perf_counter()
        out, err = CappedBuffer(1 << 20), CappedBuffer(1 << 20)
        exe = await self._create_exec(ref, argv, stdin=False, env={}, cwd=None)
        stream = exe.start(detach=False)
        async with asyncio.timeout(limit_s), stream:
            while (msg := await stream.read_out()) is not None:
                (out if msg.stream == 1 else err).write(msg.data)
        info = await exe.inspect()
        return ExecResult(
            exit_code=info["ExitCode"],
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            duration_ms=(time.perf_counter() - start) * 1000,
        )

    async def _create_exec(
        self,
        ref: str,
        argv: list[str],
        *,
        stdin: bool,
        env: Mapping[str, str],
        cwd: str | None,
        tty: bool = False,
    ) -> Any:
        try:
            return await self.docker.containers.container(ref).exec(
                argv, stdin=stdin, environment=dict(env), workdir=cwd, tty=tty
            )
        except aiodocker.DockerError as exc:
            if exc.status in (404, 409):
                raise SandboxStateError(f"sandbox container is not running: {exc.message}") from exc
            raise _unavailable(exc) from exc
        except OSError as exc:
            raise _unavailable(exc) from exc

    async def exec(self, ref: str, request: ExecRequest) -> ExecResult:
        start = time.perf_counter()
        argv = ["/bin/sh", "-c", REPORT_PID_AND_EXEC, "sh", *request.argv()]
        exe = await self._create_exec(
            ref, argv, stdin=request.stdin is not None, env=request.env, cwd=request.cwd
        )
        out = CappedBuffer(request.output_limit)
        err = CappedBuffer(request.output_limit)
        pid_line = bytearray()
        pid: int | None = None
        timed_out = False
        stream: Stream = exe.start(detach=False)

        async def pump() -> None:
            nonlocal pid
            async with stream:
                if request.stdin is not None:
                    await send_stdin(stream, request.stdin)
                while (msg := await stream.read_out()) is not None:
                    if msg.stream == 1:
                        out.write(msg.data)
                    elif pid is None:
                        pid_line.extend(msg.data)
                        head, sep, rest = bytes(pid_line).partition(b"\n")
                        if sep:
                            pid = int(head)
                            err.write(rest)
                    else:
                        err.write(msg.data)

        task = asyncio.ensure_future(pump())
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=request.timeout)
        except TimeoutError:
            timed_out = True
            if pid is not None:
                await self._kill_session(ref, pid)
            try:
                await asyncio.wait_for(task, timeout=2.0)
            except TimeoutError:
                task.cancel()
        except aiodocker.DockerError as exc:
            raise SandboxStateError(f"exec failed: {exc.message}") from exc
        exit_code: int | None = None
        oom = False
        if not timed_out:
            exit_code = (await exe.inspect())["ExitCode"]
            if exit_code == _SIGKILL_EXIT:
                oom = await self._oom_happened(ref)
        return ExecResult(
            exit_code=exit_code,
            stdout=out.getvalue(),
            stderr=err.getvalue(),
            duration_ms=(time.perf_counter() - start) * 1000,
            timed_out=timed_out,
            truncated=out.truncated or err.truncated,
            oom_killed=oom,
        )

    async def open_process(
        self, ref: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> ExecStream:
        exe = await self._create_exec(ref, list(argv), stdin=True, env=env or {}, cwd=None)
        stream: Stream = exe.start(detach=False)
        try:
            await stream._init()
        except aiodocker.DockerError as exc:
            raise SandboxStateError(f"could not attach to the sandbox: {exc.message}") from exc
        return ExecStream(stream)

    async def open_pty(
        self, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None
    ) -> PtyExecStream:
        exe = await self._create_exec(ref, list(argv), stdin=True, env=env or {}, cwd=None, tty=True)
        stream: Stream = exe.start(detach=False)
        try:
            await stream._init()
            await exe.resize(h=rows, w=cols)
        except aiodocker.DockerError as exc:
            raise SandboxStateError(f"could not attach to the sandbox: {exc.message}") from exc
        return PtyExecStream(exe, stream)

    def state_dir(self, ref: str) -> str:
        return STATE_ROOT

    async def reset(self, ref: str, workspace: str) -> None:
        argv = ["/bin/sh", "-c", RESET_SANDBOX, "sh", workspace, STATE_ROOT]
        try:
            res = await self._run_quick(ref, argv)
        except TimeoutError as exc:
            raise SandboxStateError("sandbox reset timed out") from exc
        if res.exit_code != 0:
            raise SandboxStateError(f"sandbox reset failed: {res.stderr.decode(errors='replace')}")

    async def kill_tree(self, ref: str, pid: int, *, include_root: bool = True) -> None:
        argv = ["/bin/sh", "-c", KILL_TREE, "sh", str(pid)] + ([] if include_root else ["children"])
        try:
            await self._run_quick(ref, argv)
        except (SandboxStateError, TimeoutError, aiodocker.DockerError) as exc:
            log.warning("could not kill process tree %s in %s: %s", pid, ref[:12], exc)

    async def _kill_session(self, ref: str, sid: int) -> None:
        try:
            await self._run_quick(ref, ["/bin/sh", "-c", KILL_SESSION, "sh", str(sid)])
        except (SandboxStateError, TimeoutError, aiodocker.DockerError) as exc:
            log.warning("could not kill process tree %s in %s: %s", sid, ref[:12], exc)

    async def _oom_happened(self, ref: str) -> bool:
        """Whether the container's OOM-kill counter moved since we last looked."""
        try:
            res = await self._run_quick(ref, ["/bin/sh", "-c", OOM_COUNT])
            count = int(res.stdout.strip() or 0)
        except (SandboxStateError, TimeoutError, ValueError, aiodocker.DockerError):
            return False
        seen = self._oom_seen.get(ref, 0)
        self._oom_seen[ref] = count
        return count > seen

    # -- files --------------------------------------------------------------------------------

    async def _resolve(self, ref: str, path: str, workspace: str) -> _Resolved:
        """Resolve symlinks in ``path`` inside the container and refuse an escape."""
        res = await self._run_quick(ref, ["/bin/sh", "-c", RESOLVE_PATH, "sh", path])
        if res.exit_code != 0:
            raise SandboxStateError(f"could not resolve path: {res.stderr.decode(errors='replace')}")
        lines = res.stdout.decode().split("\n")
        found = _Resolved(lines[0], lines[1], lines[2], int(lines[3]), int(lines[4]), int(lines[5]))
        full = posixpath.join(found.existing, found.tail) if found.tail else found.existing
        root = workspace.rstrip("/")
        if full != root and not full.startswith(root + "/"):
            raise PathOutsideWorkspace(f"path {path!r} resolves outside the workspace", path=path)
        return found

    async def write_file(self, ref: str, path: str, data: bytes, workspace: str) -> None:
        found = await self._resolve(ref, path, workspace)
        existing, tail, kind = found.existing, found.tail, found.kind
        if not tail:
            if kind == "dir":
                raise InvalidInput(f"{path!r} is a directory", path=path)
            existing, tail = posixpath.split(existing)
        elif kind != "dir":
            raise InvalidInput(f"a parent of {path!r} is not a directory", path=path)
        buf = io.BytesIO()
        parts = tail.split("/")
        now = time.time()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for i in range(1, len(parts)):
                d = tarfile.TarInfo("/".join(parts[:i]))
                d.type, d.mode, d.mtime = tarfile.DIRTYPE, 0o755, now
                d.uid, d.gid = found.uid, found.gid
                tar.addfile(d)
            f = tarfile.TarInfo(tail)
            f.size, f.mode, f.mtime = len(data), 0o644, now
            f.uid, f.gid = found.uid, found.gid
            tar.addfile(f, io.BytesIO(data))
        try:
            async with self.docker._query(
                f"containers/{ref}/archive",
                method="PUT",
                data=buf.getvalue(),
                headers={"content-type": "application/x-tar"},
                params={"path": existing},
            ):
                pass
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise SandboxStateError("sandbox container is gone") from exc
            raise InvalidInput(f"could not write {path!r}: {exc.message}", path=path) from exc

    async def export_workspace(self, ref: str, workspace: str, limit: int) -> bytes:
        raw = await self._container_call("archive", ref, method="GET", params={"path": workspace})
        if len(raw) > limit:
            raise PayloadTooLarge(f"the workspace archive is over {limit} bytes")
        return await asyncio.to_thread(strip_first_component, raw)

    async def import_workspace(self, ref: str, workspace: str, archive: bytes) -> None:
        await self._container_call(
            "archive",
            ref,
            method="PUT",
            data=archive,
            headers={"content-type": "application/x-tar"},
            params={"path": workspace},
        )

    async def pause(self, ref: str) -> None:
        await self._container_call("pause", ref, method="POST")

    async def unpause(self, ref: str) -> None:
        try:
            await self._container_call("unpause", ref, method="POST")
        except SandboxStateError:
            if not await self.is_running(ref):
                raise
            # "not paused" is fine: resuming a sandbox that was never frozen

    async def read_file(self, ref: str, path: str, workspace: str, limit: int) -> bytes:
        found = await self._resolve(ref, path, workspace)
        if found.tail:
            raise NotFound(f"no file at {path!r}", path=path)
        if found.kind != "file":
            raise InvalidInput(f"{path!r} is not a regular file", path=path)
        if found.size > limit:
            raise PayloadTooLarge(f"{path!r} is {found.size} bytes; the limit is {limit}", path=path)
        try:
            tar = await self.docker.containers.container(ref).get_archive(found.existing)
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise NotFound(f"no file at {path!r}", path=path) from exc
            raise SandboxStateError(f"could not read {path!r}: {exc.message}") from exc
        with tar:
            member = tar.next()
            if member is None or not member.isfile():
                raise InvalidInput(f"{path!r} is not a regular file", path=path)
            if member.size > limit:
                raise PayloadTooLarge(f"{path!r} is larger than {limit} bytes", path=path)
            handle = tar.extractfile(member)
            assert handle is not None
            return handle.read()

    async def _container_call(self, what: str, ref: str, **kw: Any) -> bytes:
        """One raw Docker API call on a container; 404 is ``SandboxStateError``."""
        try:
            async with self.docker._query(f"containers/{ref}/{what}", **kw) as resp:
                return bytes(await resp.read())
        except aiodocker.DockerError as exc:
            if exc.status == 404:
                raise SandboxStateError("sandbox container is gone") from exc
            raise SandboxStateError(f"docker {what} failed: {exc.message}") from exc
        except OSError as exc:
            raise _unavailable(exc) from exc
