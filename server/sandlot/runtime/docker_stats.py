"""What a container uses now, from the engine's own statistics (the sandbox cannot forge them)."""

from __future__ import annotations

from typing import Any

import aiodocker

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.base import Usage

__all__ = ["container_usage", "usage_of"]


async def container_usage(docker: aiodocker.Docker, ref: str) -> Usage:
    """One non-streamed sample: the engine takes two readings about a second apart."""
    found = await docker.containers.container(ref).stats(stream=False)
    if not found:
        raise SandboxStateError("the engine gave no statistics for the sandbox")
    return usage_of(found[-1])


def usage_of(stats: dict[str, Any]) -> Usage:
    """Usage from the engine's statistics (cgroup v1 or v2 fields), as ``docker stats`` reads
    them: CPU over the sampling interval, memory without the inactive page cache."""
    memory = stats.get("memory_stats") or {}
    if "usage" not in memory:
        raise SandboxStateError("the sandbox is not running")
    detail = memory.get("stats") or {}
    cache = detail.get("total_inactive_file", detail.get("inactive_file", 0))
    cpu, before = stats.get("cpu_stats") or {}, stats.get("precpu_stats") or {}
    used = cpu.get("cpu_usage", {}).get("total_usage", 0) - before.get("cpu_usage", {}).get("total_usage", 0)
    elapsed = cpu.get("system_cpu_usage", 0) - before.get("system_cpu_usage", 0)
    cores = cpu.get("online_cpus") or len(cpu.get("cpu_usage", {}).get("percpu_usage") or [1])
    percent = used / elapsed * cores * 100 if used > 0 and elapsed > 0 else 0.0
    return Usage(
        cpu_percent=round(percent, 1),
        memory_bytes=max(int(memory["usage"]) - int(cache), 0),
        memory_limit=int(memory["limit"]) if memory.get("limit") else None,
        processes=int((stats.get("pids_stats") or {}).get("current", 0)),
    )
