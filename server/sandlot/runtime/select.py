"""Choose the runtime from settings: Docker, local, or auto (Docker if it answers)."""

from __future__ import annotations

import logging

from sandlot.domain.errors import InvalidInput, RuntimeUnavailable, SandlotError
from sandlot.runtime.base import SandboxRuntime
from sandlot.settings import Mode, RuntimeKind, Settings

__all__ = ["make_runtime"]

log = logging.getLogger(__name__)


async def make_runtime(settings: Settings) -> SandboxRuntime:
    from sandlot.runtime.docker import DockerRuntime
    from sandlot.runtime.local import LocalRuntime

    if settings.runtime in (RuntimeKind.DOCKER, RuntimeKind.AUTO):
        docker = DockerRuntime(
            settings.docker_url, instance=settings.instance, guard_image=settings.network_guard_image
        )
        try:
            await docker.ping()
            return docker
        except Exception as exc:  # any reason at all: no socket, refused, permission, timeout
            await docker.close()
            reason = exc.message if isinstance(exc, SandlotError) else f"{type(exc).__name__}: {exc}"
            if settings.runtime is RuntimeKind.DOCKER:
                raise RuntimeUnavailable(
                    f"SANDLOT_RUNTIME=docker, but no Docker engine answers: {reason}"
                ) from exc
            log.warning("no Docker engine answers (%s); using the local runtime", reason)
    local = LocalRuntime(settings.data_dir / "sandboxes", instance=settings.instance)
    if not local.isolated:
        if settings.mode is Mode.PRODUCTION and not settings.allow_unisolated:
            raise InvalidInput(
                "the local runtime is not isolated here (bubblewrap missing); refusing in "
                "production mode. Install bubblewrap, use Docker, or set "
                "SANDLOT_ALLOW_UNISOLATED=true"
            )
        log.warning(
            "LOCAL RUNTIME IS NOT ISOLATED: sandboxes are plain processes on this host "
            "(install bubblewrap to isolate them)"
        )
    return local
