"""Removing a container on Docker: a remove that meets another one under way returns only once
the container is gone, so a sandbox is never reported offline with its container still there
(two reapers, or a reaper and the reconciler, shutting one sandbox down at once)."""

from __future__ import annotations

import asyncio
import secrets

from sandlot.runtime.base import LABEL_SANDBOX, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from tests.conftest import BUSYBOX


async def test_each_of_two_removes_at_once_returns_once_the_container_is_gone(
    docker_runtime: DockerRuntime,
) -> None:
    for _ in range(3):
        sandbox_id = f"sbx_{secrets.token_hex(8)}"
        ref = await docker_runtime.create(
            SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
        )
        removes = [asyncio.create_task(docker_runtime.remove(ref)) for _ in range(2)]
        for finished in asyncio.as_completed(removes):
            await finished
            left = await docker_runtime.docker.containers.list(
                all=True, filters={"label": [f"{LABEL_SANDBOX}={sandbox_id}"]}
            )
            assert left == [], "a remove returned while the container was still there"
