"""Suspending a Docker sandbox: its processes stopped and continued by the sandbox user, never
with the engine's cgroup freezer (an exec started at the same moment wedges it for good)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.docker_streams import engine
from sandlot.runtime.scripts import FREEZE_SANDBOX, THAW_SANDBOX

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["pause", "unpause"]


async def pause(rt: DockerRuntime, ref: str) -> tuple[int, ...]:
    """Stop the sandbox user's processes (``FREEZE_SANDBOX``, in a process of its own, not
    the session's shell it would stop too). Returns the pids that were stopped before."""
    try:
        res = await rt.run_quick(ref, ["/bin/sh", "-c", FREEZE_SANDBOX], output_limit=4096)
    except TimeoutError as exc:
        raise SandboxStateError("stopping the sandbox's processes took too long") from exc
    if res.exit_code != 0:
        raise SandboxStateError(f"could not stop the sandbox's processes (exit {res.exit_code})")
    words = res.stdout.split()
    return tuple(int(w) for w in words[:256] if w.isdigit() and len(w) <= 10)


async def unpause(rt: DockerRuntime, ref: str, keep: Sequence[int] = ()) -> None:
    """Continue them all but ``keep``; a container an earlier version froze with the engine's
    pause is unpaused first."""
    with engine("inspect"):
        state = (await rt.docker.containers.container(ref).show()).get("State", {})
    if state.get("Paused"):
        with engine("unpause"):
            async with rt.docker._query(f"containers/{ref}/unpause", method="POST"):
                pass
    elif not state.get("Running"):
        raise SandboxStateError("the sandbox container is not running")
    argv = ["/bin/sh", "-c", THAW_SANDBOX, "sh", *(str(int(p)) for p in keep[:256])]
    try:
        res = await rt.run_quick(ref, argv)
    except TimeoutError as exc:
        raise SandboxStateError("continuing the sandbox's processes took too long") from exc
    if res.exit_code != 0:
        raise SandboxStateError(f"could not continue the sandbox's processes (exit {res.exit_code})")
