"""Reaching past the service to the engine, as a fault would: a sandbox's container killed or
removed underneath it (found by the sandbox's label)."""

from __future__ import annotations

import aiodocker


async def kill_container(sandbox_id: str) -> None:
    docker = aiodocker.Docker()
    try:
        for c in await docker.containers.list(filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]}):
            await c.kill()
    finally:
        await docker.close()


async def remove_container(sandbox_id: str) -> None:
    docker = aiodocker.Docker()
    try:
        found = await docker.containers.list(
            all=True, filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]}
        )
        assert found, "no container for the sandbox"
        for c in found:
            await c.delete(force=True)
    finally:
        await docker.close()
