"""Tenant A's side: sandboxes and sessions with small explicit limits, always removed."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiodocker
from litestar.testing import AsyncTestClient

from sandlot.runtime.base import Usage
from sandlot.runtime.docker_stats import usage_of

__all__ = ["Tenant", "container_usage"]

#: Small enough that nothing in this suite can hurt the machine.
SMALL = {"memory_mb": 128, "cpus": 0.5, "pids": 32, "disk_mb": 64}
#: A layer smaller than its image cannot be sized: the python image needs more than busybox.
DISK_MB = {"sandlot/busybox:latest": 64, "sandlot/python:3": 1024}


class Tenant:
    """One tenant's key, and what it does through the API."""

    def __init__(self, client: AsyncTestClient, headers: dict[str, str]) -> None:
        self.client = client
        self.h = headers

    @asynccontextmanager
    async def sandbox(self, image: str = "sandlot/python:3", **fields: Any) -> AsyncIterator[str]:
        resp = await self.client.post(
            "/v1/sandboxes",
            json={"image": image, **SMALL, "disk_mb": DISK_MB[image], **fields},
            headers=self.h,
        )
        assert resp.status_code == 201, resp.text
        sid = resp.json()["id"]
        try:
            yield sid
        finally:
            await self.client.delete(f"/v1/sandboxes/{sid}", headers=self.h)

    @asynccontextmanager
    async def session(self, image: str = "sandlot/python:3", **fields: Any) -> AsyncIterator[str]:
        env = {
            "name": f"ab-{secrets.token_hex(3)}",
            "images": [image],
            **SMALL,
            "disk_mb": DISK_MB[image],
            **fields,
        }
        resp = await self.client.post("/v1/environments", json=env, headers=self.h)
        assert resp.status_code == 201, resp.text
        resp = await self.client.post("/v1/sessions", json={"environment": env["name"]}, headers=self.h)
        assert resp.status_code == 201, resp.text
        body = resp.json()
        try:
            yield body["id"]
        finally:
            await self.client.delete(f"/v1/sessions/{body['id']}", headers=self.h)
            if body["sandbox_id"]:
                await self.client.delete(f"/v1/sandboxes/{body['sandbox_id']}", headers=self.h)

    async def exec(self, sid: str, command: str | list[str], timeout: float = 30) -> dict[str, Any]:
        body = {"command": command, "timeout": timeout}
        resp = await self.client.post(f"/v1/sandboxes/{sid}/exec", json=body, headers=self.h)
        assert resp.status_code == 200, resp.text
        return resp.json()

    async def sh(self, session_id: str, command: str, timeout: float = 30) -> dict[str, Any]:
        url = f"/v1/sessions/{session_id}/features/shell/run"
        resp = await self.client.post(url, json={"command": command, "timeout": timeout}, headers=self.h)
        assert resp.status_code == 200, resp.text
        return resp.json()

    async def sandbox_of(self, session_id: str) -> str:
        resp = await self.client.get(f"/v1/sessions/{session_id}", headers=self.h)
        return str(resp.json()["sandbox_id"])


async def container_usage(sandbox_id: str) -> Usage:
    """What the host's engine measures of the sandbox's container (about a second)."""
    docker = aiodocker.Docker()
    try:
        stats = await docker.containers.container(f"sandlot-{sandbox_id}").stats(stream=False)
        return usage_of(stats[-1])
    finally:
        await docker.close()
