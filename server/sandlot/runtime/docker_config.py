"""What a sandbox's container is made of: its configuration for the engine, and the facts the
runtime keeps about it in its labels (so any process of the deployment can read them back).

- The image's user runs everything a tenant starts and every program of ours that touches the
  sandbox. When that user is not root, the container's own processes (its init and keepalive,
  session 1) run as root (with no capabilities): the sandbox user can neither signal nor
  trace them, and a reset can kill everything that is the sandbox user's.
- Every writable place is sized: the writable layer by ``disk_mb`` where the engine can size
  it; with a read-only root the workspace and ``/tmp`` are size-bounded memory file systems.
- Network, when allowed, is one bridge for all sandboxes with traffic between containers off,
  so no sandbox reaches another (another tenant's or its own tenant's), without IPv6; the host
  itself is closed to it by :mod:`sandlot.runtime.docker_guard`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sandlot.runtime.base import LABEL_INSTANCE, LABEL_MANAGED, SandboxSpec

__all__ = [
    "LABEL_USER",
    "LABEL_WORKSPACE",
    "NETWORK",
    "NETWORK_OPTIONS",
    "NO_IPV6",
    "Facts",
    "container_config",
    "runs_as_root",
]

LABEL_USER = "dev.sandlot.user"
LABEL_WORKSPACE = "dev.sandlot.workspace"  # "memory" when the workspace is a tmpfs
NETWORK = "sandlot-sandboxes"
NETWORK_OPTIONS = {"com.docker.network.bridge.enable_icc": "false"}
#: a network sandbox has no IPv6: the guard that keeps it from its host closes IPv4 routes
NO_IPV6 = {"net.ipv6.conf.all.disable_ipv6": "1", "net.ipv6.conf.default.disable_ipv6": "1"}
KEEPALIVE = ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 3600; done"]
SHM_BYTES = 64 * 1024 * 1024


def runs_as_root(user: str) -> bool:
    return user.split(":", 1)[0] in ("", "0", "root")


@dataclass(frozen=True, slots=True)
class Facts:
    """What the runtime must know of a container to act in it."""

    user: str  # who runs sandbox work ("" : the image's default)
    memory_workspace: bool  # the workspace is a tmpfs (the engine's archive endpoint cannot see it)

    @classmethod
    def of_labels(cls, labels: Mapping[str, str]) -> Facts:
        return cls(labels.get(LABEL_USER, ""), labels.get(LABEL_WORKSPACE) == "memory")


def _tmpfs(size_mb: int, user: str) -> str:
    owner = user.split(":")
    if len(owner) == 2 and all(p.isdigit() for p in owner):
        return f"rw,nosuid,nodev,size={size_mb}m,uid={owner[0]},gid={owner[1]},mode=0755"
    return f"rw,nosuid,nodev,size={size_mb}m,mode=1777"


def container_config(
    spec: SandboxSpec, *, instance: str, image_user: str, disk_limits: bool
) -> tuple[dict[str, Any], Facts]:
    """The engine's create body for ``spec`` and the facts its labels record."""
    facts = Facts(user=image_user, memory_workspace=spec.read_only_root)
    labels = {LABEL_MANAGED: "1", LABEL_INSTANCE: instance, **spec.labels, LABEL_USER: image_user}
    if facts.memory_workspace:
        labels[LABEL_WORKSPACE] = "memory"
    host: dict[str, Any] = {
        "Memory": spec.limits.memory_mb * 1024 * 1024,
        "MemorySwap": spec.limits.memory_mb * 1024 * 1024,
        "NanoCpus": int(spec.limits.cpus * 1e9),
        "PidsLimit": spec.limits.pids,
        "CapDrop": ["ALL"],
        "SecurityOpt": ["no-new-privileges"],
        "NetworkMode": NETWORK if spec.network else "none",
        "ReadonlyRootfs": spec.read_only_root,
        "Init": True,
        "Mounts": [],
        "ShmSize": SHM_BYTES,
    }
    if spec.network:
        host["Sysctls"] = NO_IPV6
    if spec.read_only_root:
        # nothing of the image can change; the writable places are memory, within disk_mb
        host["Tmpfs"] = {
            spec.workspace: _tmpfs(spec.limits.disk_mb, image_user),
            "/tmp": f"rw,nosuid,nodev,size={max(16, spec.limits.disk_mb // 4)}m,mode=1777",
        }
    elif disk_limits:
        host["StorageOpt"] = {"size": f"{spec.limits.disk_mb}M"}
    body: dict[str, Any] = {
        "Image": spec.image,
        "Cmd": KEEPALIVE,
        "Env": [f"{k}={v}" for k, v in spec.env.items()],
        "WorkingDir": spec.workspace,
        "Labels": labels,
        "HostConfig": host,
        "NetworkDisabled": not spec.network,
        "StopTimeout": 1,
    }
    if not runs_as_root(image_user):
        body["User"] = "0:0"  # the container's own processes; sandbox work runs as image_user
    return body, facts
