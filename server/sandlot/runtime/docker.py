"""The Docker runtime: one container per sandbox, driven through aiodocker.

Containers are created locked down (no capabilities, no-new-privileges, no network unless
allowed, memory/cpu/pids limits, a writable layer of ``disk_mb`` where the engine's storage
can size it, an init process to reap orphans) and carry our labels so a restarted service can
find them. Commands go through ``docker exec`` wrapped so that their whole process tree can be
killed on timeout (:mod:`sandlot.runtime.docker_exec`); files and archives move through programs
run as the sandbox user (:mod:`sandlot.runtime.docker_files`). Every engine failure becomes
``RuntimeUnavailable`` (the engine does not answer) or ``SandboxStateError`` (this container
is broken or gone).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any

import aiodocker
import aiohttp
from aiodocker.stream import Stream

from sandlot.domain.errors import ImageNotFound, RuntimeUnavailable, SandboxStateError
from sandlot.runtime import docker_exec, docker_files, docker_freeze, docker_listing
from sandlot.runtime.archives import ArchiveReport
from sandlot.runtime.base import (
    LABEL_INSTANCE,
    LABEL_MANAGED,
    ExecRequest,
    ExecResult,
    FileStream,
    LimitsHit,
    OwnedSandbox,
    ProcessStream,
    SandboxSpec,
    Usage,
    WorkspaceScan,
)
from sandlot.runtime.channels import ChannelLookup, Channels
from sandlot.runtime.docker_config import Facts
from sandlot.runtime.docker_create import create_container, sized_layers
from sandlot.runtime.docker_guard import HostGuard
from sandlot.runtime.docker_images import BUSYBOX_IMAGE
from sandlot.runtime.docker_reset import CleanSlate
from sandlot.runtime.docker_stats import container_usage
from sandlot.runtime.docker_streams import ExecStream, PtyExecStream, engine, engine_error
from sandlot.runtime.scripts import (
    HELPER_PATH,
    HELPER_UNSET,
    KILL_SESSION,
    KILL_TREE,
    LIMIT_COUNTS,
    PROCESS_ROOT,
    STATE_ROOT,
)

__all__ = ["DockerRuntime"]

log = logging.getLogger(__name__)

# connecting must be quick; reading may take as long as a command or a transfer does
_TIMEOUT = aiohttp.ClientTimeout(total=None, connect=10, sock_connect=10, sock_read=None)
_PING_SECONDS = 10.0
#: The environment our own programs run with (see scripts.HELPER_PATH).
HELPER_ENV = {"PATH": HELPER_PATH, **dict.fromkeys(HELPER_UNSET, "")}


class DockerRuntime:
    """:class:`~sandlot.runtime.base.SandboxRuntime` on a Docker engine."""

    name = "docker"
    isolated = True
    other_users = True  # docker exec's User: no capability comes with it (CapDrop ALL)
    relays_output = True  # a reader gone: the engine drops what the exec writes, it goes on

    def __init__(
        self, url: str | None = None, instance: str = "default", guard_image: str = BUSYBOX_IMAGE
    ) -> None:
        self._url = url
        self.instance = instance
        self._client: aiodocker.Docker | None = None
        self._limits_seen: dict[str, tuple[int, int]] = {}  # OOM kills, refused forks
        self.disk_limits = False
        self._storage_checked = False
        self._facts: dict[str, Facts] = {}
        self._clean = CleanSlate(self)
        self.guard = HostGuard(self, guard_image)
        self.channels = Channels()

    @property
    def docker(self) -> aiodocker.Docker:
        if self._client is None:
            try:
                self._client = aiodocker.Docker(url=self._url, timeout=_TIMEOUT)
                # aiohttp pools at most 100 connections by default, and every persistent shell
                # and open stream holds one for its whole life: 100 sessions would starve every
                # other engine call until its connect timeout (503s at 200 agents). The engine
                # is local; its own limits apply, not a client-side pool's.
                self._client.session.connector._limit = 0  # type: ignore[union-attr]
            except (AssertionError, ValueError, OSError) as exc:  # no DOCKER_HOST and no socket
                raise RuntimeUnavailable(
                    f"no Docker engine to connect to: {exc or type(exc).__name__}"
                ) from exc
        return self._client

    async def close(self) -> None:
        await self.guard.stop()
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def ping(self) -> None:
        try:
            async with asyncio.timeout(_PING_SECONDS):
                with engine("ping"):
                    await self.docker.version()
                    if not self._storage_checked:
                        self.disk_limits = sized_layers(await self.docker.system.info())
                        self._storage_checked = True
        except TimeoutError as exc:
            raise RuntimeUnavailable(f"the Docker engine did not answer within {_PING_SECONDS:g} s") from exc

    async def _image_user(self, image: str) -> str | None:
        """The user ``image`` runs as ("" for root), or None when there is no such image."""
        try:
            with engine("image inspect"):
                found = await self.docker.images.inspect(image)
        except SandboxStateError:  # 404 (and 4xx) from the images endpoint: no such image
            return None
        return str((found.get("Config") or {}).get("User") or "")

    async def image_exists(self, image: str) -> bool:
        return await self._image_user(image) is not None

    def ref_for(self, sandbox_id: str) -> str:
        return f"sandlot-{sandbox_id}"

    async def create(self, spec: SandboxSpec) -> str:
        if not self._storage_checked:
            await self.ping()
        image_user = await self._image_user(spec.image)
        if image_user is None:
            raise ImageNotFound(f"image {spec.image!r} is not available", image=spec.image)
        if spec.network:
            await self.guard.ready()  # the host's firewall set before any network sandbox runs
        name = self.ref_for(spec.sandbox_id)
        try:
            container, facts = await create_container(self, spec, name, image_user)
        except aiodocker.DockerError as exc:
            raise engine_error(exc, "create") from exc
        self._facts[container.id] = facts
        with engine("start"):
            try:
                await container.start()
            except aiodocker.DockerError:
                await container.delete(force=True, v=True)
                raise
        if spec.network:  # closed to its host before anything of the tenant's runs in it
            try:
                await self.guard.close(container.id)
            except BaseException:  # refused, failed or cancelled: never left unguarded
                await self.remove(container.id)
                raise
        try:  # readiness: the sandbox must be able to run our shell
            probe = await self.run_quick(container.id, ["/bin/sh", "-c", "true"])
            if probe.exit_code != 0:
                raise SandboxStateError(f"readiness probe exited with {probe.exit_code}")
        except (SandboxStateError, TimeoutError) as exc:
            await self.remove(container.id)
            raise SandboxStateError(f"sandbox did not become ready: {exc}") from exc
        self._limits_seen[container.id] = (0, 0)
        await self._clean.learn(container.id, spec.workspace)
        return str(container.id)

    async def remove(self, ref: str) -> None:
        self._limits_seen.pop(ref, None)
        self._facts.pop(ref, None)
        self._clean.forget(ref)

        try:
            with engine("remove"):
                await self.docker.containers.container(ref).delete(force=True, v=True)
        except SandboxStateError as exc:
            if "in progress" in str(exc):  # another process is removing it: wait until it is gone
                await self._gone(ref)

    async def _gone(self, ref: str, wait: float = 30.0) -> None:
        """Until the engine no longer knows ``ref`` (at most ``wait`` seconds: then
        ``SandboxStateError``); a caller that says a sandbox is offline has seen it go."""
        deadline = asyncio.get_running_loop().time() + wait
        while True:
            try:
                with engine("inspect"):
                    await self.docker.containers.container(ref).show()
            except SandboxStateError:
                return  # no such container
            if asyncio.get_running_loop().time() > deadline:
                raise SandboxStateError(f"the sandbox container {ref[:12]} is still being removed")
            await asyncio.sleep(0.1)

    async def is_running(self, ref: str) -> bool:
        try:
            with engine("inspect"):
                info = await self.docker.containers.container(ref).show()
        except SandboxStateError:
            return False
        return bool(info["State"]["Running"])

    async def list_owned(self, instance: str | None = None) -> list[OwnedSandbox]:
        filters = [f"{LABEL_MANAGED}=1"]
        if instance is not None:
            filters.append(f"{LABEL_INSTANCE}={instance}")
        with engine("list"):
            found = await self.docker.containers.list(all=True, filters={"label": filters})
        return [
            OwnedSandbox(
                ref=c.id,
                labels=c._container.get("Labels") or {},
                running=c._container.get("State") in ("running", "paused"),  # paused: suspended
            )
            for c in found
        ]

    # -- commands ---------------------------------------------------------------------------

    async def facts(self, ref: str) -> Facts:
        found = self._facts.get(ref)
        if found is None:
            with engine("inspect"):
                info = await self.docker.containers.container(ref).show()
            found = self._facts[ref] = Facts.of_labels(info["Config"].get("Labels") or {})
        return found

    async def attach(
        self,
        ref: str,
        argv: Sequence[str],
        *,
        stdin: bool = False,
        env: Mapping[str, str] | None = None,
        tty: bool = False,
        helper: bool = False,
        user: str | None = None,
    ) -> tuple[Any, Stream]:
        """Start ``argv`` in the container as its sandbox user (or ``user``), with its streams
        attached. A ``helper`` (a program of ours) runs with :data:`HELPER_ENV` over the
        sandbox's environment."""
        user = user or (await self.facts(ref)).user
        environment = {**(env or {}), **HELPER_ENV} if helper else dict(env or {})
        with engine("exec"):
            exe = await self.docker.containers.container(ref).exec(
                list(argv), stdin=stdin, environment=environment, tty=tty, user=user
            )
            stream: Stream = exe.start(detach=False)
            await stream._init()
        return exe, stream

    async def exit_code(self, exe: Any) -> int | None:
        with engine("exec inspect"):
            code = (await exe.inspect())["ExitCode"]
        return None if code is None else int(code)

    async def run_quick(
        self,
        ref: str,
        argv: list[str],
        *,
        stdin: bytes | AsyncIterable[bytes] | None = None,
        limit_s: float | None = 10.0,
        output_limit: int = 1 << 20,
        user: str | None = None,
    ) -> ExecResult:
        """Run a program of ours (no pid wrapper, no tree kill) to completion."""
        return await docker_exec.run_quick(
            self, ref, argv, stdin=stdin, limit_s=limit_s, output_limit=output_limit, user=user
        )

    async def exec(self, ref: str, request: ExecRequest) -> ExecResult:
        return await docker_exec.run_command(self, ref, request)

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
        try:
            return await self.run_quick(ref, argv, stdin=stdin, limit_s=timeout, output_limit=output_limit)
        except TimeoutError:
            return ExecResult(None, b"", b"", timeout * 1000, timed_out=True)

    async def open_process(
        self, ref: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> ExecStream:
        _, stream = await self.attach(ref, argv, stdin=True, env=env)
        return ExecStream(stream)

    async def open_pty(
        self, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None
    ) -> PtyExecStream:
        return await docker_exec.open_terminal(self, ref, argv, cols=cols, rows=rows, env=env)

    def state_dir(self, ref: str) -> str:
        return STATE_ROOT

    def process_dir(self, ref: str) -> str:
        return PROCESS_ROOT

    async def reset(self, ref: str, workspace: str, *, then_shell: bool = False) -> ProcessStream | None:
        return await self._clean.reset(ref, workspace, then_shell=then_shell)

    async def kill_tree(self, ref: str, pid: int, *, include_root: bool = True) -> None:
        argv = ["/bin/sh", "-c", KILL_TREE, "sh", str(pid)] + ([] if include_root else ["children"])
        try:
            await self.run_quick(ref, argv)
        except (SandboxStateError, RuntimeUnavailable, TimeoutError) as exc:
            log.warning("could not kill process tree %s in %s: %s", pid, ref[:12], exc)

    async def kill_session(self, ref: str, sid: int, user: str | None = None) -> None:
        """Kill process session ``sid`` (a command's, a terminal's) in the container, as the
        user it runs as (no capability lets one user signal another's processes)."""
        try:
            if user is None:
                await self.run_program(ref, KILL_SESSION, [str(sid)])
            else:
                await self.run_quick(ref, ["/bin/sh", "-c", KILL_SESSION, "sh", str(sid)], user=user)
        except (SandboxStateError, RuntimeUnavailable, TimeoutError) as exc:
            log.warning("could not kill process session %s in %s: %s", sid, ref[:12], exc)

    async def oom_killed(self, ref: str) -> bool:
        return (await self.limits_hit(ref)).oom_killed

    async def limits_hit(self, ref: str) -> LimitsHit:
        """Whether the container's OOM-kill or refused-fork counter moved since we last looked."""
        try:
            res = await self.run_program(ref, LIMIT_COUNTS)
            oom, pids = (int(n) for n in res.stdout.split())
        except (SandboxStateError, RuntimeUnavailable, TimeoutError, ValueError):
            return LimitsHit()
        seen_oom, seen_pids = self._limits_seen.get(ref, (0, 0))
        self._limits_seen[ref] = (oom, pids)
        return LimitsHit(oom_killed=oom > seen_oom, pids_limited=pids > seen_pids)

    async def usage(self, ref: str) -> Usage:
        with engine("stats"):
            return await container_usage(self.docker, ref)

    # -- files and archives (as the sandbox user; see docker_files) ----------------------------

    async def write_file(
        self, ref: str, path: str, workspace: str, data: AsyncIterable[bytes], size: int
    ) -> None:
        await docker_files.write_file(self, ref, path, workspace, data, size)

    async def read_file(self, ref: str, path: str, workspace: str, limit: int) -> FileStream:
        return await docker_files.read_file(self, ref, path, workspace, limit)

    def export_workspace(self, ref: str, workspace: str, limit: int) -> AsyncIterator[bytes]:
        return docker_files.export_workspace(self, ref, workspace, limit)

    def scan_workspace(self, ref: str, workspace: str) -> AbstractAsyncContextManager[WorkspaceScan]:
        return docker_listing.scan_workspace(self, ref, workspace)

    async def import_workspace(
        self,
        ref: str,
        workspace: str,
        archive: AsyncIterable[bytes],
        report: ArchiveReport,
        *,
        check_links: bool,
    ) -> None:
        await docker_files.import_workspace(self, ref, workspace, archive, report, check_links=check_links)

    async def pause(self, ref: str) -> tuple[int, ...]:
        return await docker_freeze.pause(self, ref)

    async def unpause(self, ref: str, keep: Sequence[int] = ()) -> None:
        await docker_freeze.unpause(self, ref, keep)
