"""Creating a sandbox's container on Docker: what the engine's storage can limit, the shared
network, and the create call that survives a leftover of an interrupted one."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiodocker

from sandlot.domain.errors import SandboxStateError
from sandlot.runtime.base import LABEL_MANAGED, SandboxSpec
from sandlot.runtime.docker_config import NETWORK, NETWORK_OPTIONS, Facts, container_config
from sandlot.runtime.docker_streams import engine

if TYPE_CHECKING:
    from sandlot.runtime.docker import DockerRuntime

__all__ = ["create_container", "ensure_network", "sized_layers"]

log = logging.getLogger(__name__)

# drivers that can size a container's writable layer (StorageOpt size)
_SIZED_DRIVERS = ("btrfs", "zfs")


def sized_layers(info: Mapping[str, Any]) -> bool:
    """Whether the engine (its ``/info``) can size a container's writable layer, that is,
    enforce disk limits; says so loudly when it cannot."""
    driver = str(info.get("Driver", ""))
    backing = {str(k): str(v) for k, v in (info.get("DriverStatus") or [])}.get("Backing Filesystem", "")
    sized = driver in _SIZED_DRIVERS or (driver == "overlay2" and backing == "xfs")
    if not sized:
        log.warning(
            "DISK LIMITS ARE NOT ENFORCED: the Docker engine's storage (%s on %s) cannot size "
            "containers; use btrfs, zfs or overlay2 on xfs with pquota "
            "(scripts/ensure-docker.sh sets up btrfs)",
            driver,
            backing or "?",
        )
    return sized


async def ensure_network(docker: aiodocker.Docker) -> None:
    """The one bridge network sandboxes with network access share (no traffic between
    containers on it)."""
    config = {
        "Name": NETWORK,
        "Driver": "bridge",
        "CheckDuplicate": True,
        "Options": NETWORK_OPTIONS,
        "Labels": {LABEL_MANAGED: "1"},
    }
    try:
        with engine("network create"):
            await docker.networks.create(config)
    except SandboxStateError as exc:  # 409: it exists already
        if not isinstance(exc.__cause__, aiodocker.DockerError) or exc.__cause__.status != 409:
            raise


async def create_container(
    rt: DockerRuntime, spec: SandboxSpec, name: str, image_user: str
) -> tuple[Any, Facts]:
    """Create the container; a leftover of an interrupted create under the same name is
    removed first, and an engine that cannot size layers after all is remembered."""
    for _ in range(3):
        body, facts = container_config(
            spec, instance=rt.instance, image_user=image_user, disk_limits=rt.disk_limits
        )
        try:
            with engine("create"):
                return await rt.docker.containers.create(body, name=name), facts
        except SandboxStateError as exc:
            cause = exc.__cause__
            if not isinstance(cause, aiodocker.DockerError):
                raise
            text = str(cause.message).lower()
            if rt.disk_limits and ("storage" in text or "quota" in text):
                log.warning("the engine refused a sized layer (%s); disk limits not enforced", text)
                rt.disk_limits = False
            elif cause.status == 409 and "name" in text:
                await rt.remove(name)
            else:
                raise cause from None
    raise SandboxStateError(f"could not create container {name}")
