"""A clean slate between sessions, proven rather than hoped for.

The reset (``scripts.RESET_SANDBOX``) kills every process a session started, empties the
workspace and every other place a session can write, and checks both. Whether that is the
whole story depends on the image: when it was first seen, the runtime listed every place its
sandbox user may write in the root filesystem (``scripts.WRITABLE_PLACES``); if those are all
among the places the reset empties, the reset is the proof. Otherwise the engine's record of
the container's changes must show nothing beyond what the container had when it was new
(remembered at creation; a container this process did not create cannot be proven and is
replaced). That record can be slow (on btrfs it walks the whole file system), which is why it
is the exception.
"""

from __future__ import annotations

import asyncio
import shlex
from typing import TYPE_CHECKING

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.docker_streams import ExecStream, engine
from sandlot.runtime.output import CappedBuffer
from sandlot.runtime.programs import program
from sandlot.runtime.scripts import (
    HELPER_UNSET,
    RESET_SANDBOX,
    SCRATCH_DIRS,
    STATE_ROOT,
    WRITABLE_PLACES,
)

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["CleanSlate"]

# what the root filesystem may show as changed after a reset: the emptied places themselves,
# and the mount points the engine makes (only root could write there)
_ALWAYS_CHANGED = frozenset(
    {"/tmp", "/var", "/var/tmp", "/var/lock", "/run", "/run/lock"}
    | {"/.dockerenv", "/dev", "/dev/console", "/dev/pts", "/dev/shm", "/dev/mqueue", "/proc", "/sys"}
    | {"/etc", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/sbin", "/sbin/docker-init"}
    | {"/usr", "/usr/sbin", "/usr/sbin/docker-init"}  # where /sbin is a link (merged /usr)
)


_DONE = "__SL_RESET_DONE"

RESET_THEN_SHELL = program("reset_then_shell.sh").replace("@DONE@", _DONE)
_RESET_SECONDS = 60.0


def restore_env(env: list[str]) -> str:
    """Shell code that gives the variables our programs run with (the helper PATH, none of
    HELPER_UNSET) the values they have in the container's own environment (``NAME=value``
    entries, as the engine reports them)."""
    own = dict(entry.partition("=")[::2] for entry in env)
    names = ("PATH", *HELPER_UNSET)
    return "; ".join(
        f"export {name}={shlex.quote(own[name])}" if name in own else f"unset {name}" for name in names
    )


class CleanSlate:
    def __init__(self, runtime: DockerRuntime) -> None:
        self._rt = runtime
        self._reset_is_enough: dict[str, bool] = {}  # image id -> the reset alone proves it
        self._image_of: dict[str, str] = {}
        self._env_of: dict[str, str] = {}  # container -> restore_env() of its environment
        self._baseline: dict[str, set[tuple[str, int]]] = {}  # container -> changes when new

    def forget(self, ref: str) -> None:
        self._image_of.pop(ref, None)
        self._env_of.pop(ref, None)
        self._baseline.pop(ref, None)

    async def _inspect(self, ref: str) -> None:
        with engine("inspect"):
            info = await self._rt.docker.containers.container(ref).show()
        self._image_of[ref] = str(info["Image"])
        self._env_of[ref] = restore_env(list((info.get("Config") or {}).get("Env") or []))

    async def learn(self, ref: str, workspace: str) -> None:
        """For a container nothing has touched yet."""
        if not await self._reset_suffices(ref, workspace):
            self._baseline[ref] = await self._changes(ref)

    async def reset(self, ref: str, workspace: str, *, then_shell: bool = False) -> ExecStream | None:
        """Reset ``ref`` and prove it; with ``then_shell`` the reset's process becomes a fresh
        ``/bin/sh`` (attached, returned) once it is done."""
        if then_shell:
            stream = await self._reset_into_shell(ref, workspace)
        else:
            await self._reset_only(ref, workspace)
            stream = None
        try:
            await self._prove(ref, workspace)
        except BaseException:
            if stream is not None:
                await stream.close()
            raise
        return stream

    async def _reset_only(self, ref: str, workspace: str) -> None:
        argv = ["/bin/sh", "-c", RESET_SANDBOX, "sh", workspace, STATE_ROOT, *SCRATCH_DIRS]
        try:
            res = await self._rt.run_quick(ref, argv, limit_s=_RESET_SECONDS)
        except TimeoutError as exc:
            raise SandboxStateError("sandbox reset timed out") from exc
        if res.exit_code != 0:
            raise SandboxStateError(f"sandbox reset failed: {res.stderr.decode(errors='replace')[-300:]}")

    async def _reset_into_shell(self, ref: str, workspace: str) -> ExecStream:
        if ref not in self._env_of:
            await self._inspect(ref)
        tail = self._env_of[ref]
        argv = ["/bin/sh", "-c", RESET_THEN_SHELL, "sh", tail, workspace, STATE_ROOT, *SCRATCH_DIRS]
        exe, stream = await self._rt.attach(ref, argv, stdin=True, helper=True)
        out, err = bytearray(), CappedBuffer(1 << 14)
        done = f"{_DONE}\n".encode()
        try:
            async with asyncio.timeout(_RESET_SECONDS):
                with engine("reset"):
                    while done not in out:
                        msg = await stream.read_out()
                        if msg is None:
                            break
                        (out.extend if msg.stream == 1 else err.write)(msg.data)
        except TimeoutError as exc:
            await stream.close()
            raise SandboxStateError("sandbox reset timed out") from exc
        except BaseException:
            await stream.close()
            raise
        if done not in out:
            await stream.close()
            code = await self._rt.exit_code(exe)
            detail = err.getvalue().decode(errors="replace")[-300:]
            raise SandboxStateError(f"sandbox reset failed (exit {code}): {detail}")
        rest = bytes(out[out.index(done) + len(done) :])
        return ExecStream(stream, first=[(1, rest)] if rest else [])

    async def _prove(self, ref: str, workspace: str) -> None:
        """After a reset: nothing the session did may be left (see the module's docstring)."""
        if await self._reset_suffices(ref, workspace):
            return  # nothing else was writable, and all of that is empty now
        baseline = self._baseline.get(ref)
        if baseline is None:
            raise SandboxStateError("cannot prove a clean slate for a container another process made")
        allowed = _ALWAYS_CHANGED | {workspace.rstrip("/")}
        left = sorted(p for p, _ in await self._changes(ref) - baseline if p not in allowed)
        if left:
            raise SandboxStateError(f"the root filesystem keeps changes of the session: {left[:5]}")

    async def _reset_suffices(self, ref: str, workspace: str) -> bool:
        """Whether the sandbox user of ``ref``'s image can write nowhere in the root filesystem
        but the places a reset empties (learnt once per image). Asked of a new container, or
        of one a reset has just emptied: a session cannot hide a writable place (making one
        needs a writable parent, and it cannot take rights away from places it does not own)."""
        if ref not in self._image_of:
            await self._inspect(ref)
        image_id = self._image_of[ref]
        if image_id not in self._reset_is_enough:
            res = await self._rt.run_quick(ref, ["/bin/sh", "-c", WRITABLE_PLACES], limit_s=120)
            emptied = (workspace.rstrip("/"), *SCRATCH_DIRS)
            places = [p for p in res.stdout.decode(errors="replace").split("\n") if p]
            self._reset_is_enough[image_id] = res.exit_code == 0 and all(
                any(p == d or p.startswith(d + "/") for d in emptied) for p in places
            )
        return self._reset_is_enough[image_id]

    async def _changes(self, ref: str) -> set[tuple[str, int]]:
        """What the engine records as changed in the container's root filesystem."""
        with engine("changes"):
            async with self._rt.docker._query(f"containers/{ref}/changes") as resp:
                found = await resp.json()
        return {(str(c.get("Path")), int(c.get("Kind", -1))) for c in found or []}
