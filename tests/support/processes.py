"""A tenant's background processes against a live server, through its HTTP API."""

from __future__ import annotations

import asyncio
import secrets
import time

import httpx
import pytest

Headers = dict[str, str]


class Live:
    def __init__(self, url: str, headers: Headers) -> None:
        self.url = url
        self.h = headers
        self.http = httpx.AsyncClient(base_url=url, headers=headers, timeout=60)

    async def session(self) -> str:
        name = f"proc-{secrets.token_hex(3)}"
        env = await self.http.post(
            "/v1/environments", json={"name": name, "images": ["sandlot/busybox:latest"]}
        )
        assert env.status_code == 201, env.text
        resp = await self.http.post("/v1/sessions", json={"environment": name})
        assert resp.status_code == 201, resp.text
        return str(resp.json()["id"])

    async def start(self, sid: str, command: str, **extra: object) -> dict:
        resp = await self.http.post(f"/v1/sessions/{sid}/processes", json={"command": command, **extra})
        assert resp.status_code == 201, resp.text
        return dict(resp.json())

    async def wait_done(self, sid: str, pid: str, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = (await self.http.get(f"/v1/sessions/{sid}/processes/{pid}")).json()
            if row["status"] != "running":
                return dict(row)
            await asyncio.sleep(0.2)
        pytest.fail("process did not end")

    async def sh(self, sid: str, command: str) -> str:
        resp = await self.http.post(f"/v1/sessions/{sid}/features/shell/run", json={"command": command})
        assert resp.status_code == 200, resp.text
        return str(resp.json()["stdout"])

    def ws_url(self, sid: str, pid: str, offset: int) -> str:
        return f"ws{self.url.removeprefix('http')}/v1/sessions/{sid}/processes/{pid}/stream?offset={offset}"
