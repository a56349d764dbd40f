"""The service killed with SIGKILL (mid-request) and started again on the same store: every
session is still listed and resumable, and no container is left that the store does not know."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path

import aiodocker
import asyncpg
import httpx
import pytest

from tests.integration.conftest import NewTenant
from tests.integration.servers import RESTART_INSTANCE, Server, restartable_server


@pytest.fixture
def server(pg_url: str, tmp_path: Path) -> Iterator[Server]:
    srv = restartable_server(pg_url, tmp_path / "data")
    try:
        yield srv
    finally:
        srv.stop(signal.SIGTERM)


async def test_sessions_survive_sigkill_and_no_unknown_container_remains(
    server: Server, pg_url: str, new_tenant: NewTenant
) -> None:
    headers = await new_tenant()
    server.start()
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
        env = await http.post("/v1/environments", json={"name": "rs", "images": ["sandlot/busybox:latest"]})
        assert env.status_code == 201
        active = (await http.post("/v1/sessions", json={"environment": "rs"})).json()
        sleeping = (await http.post("/v1/sessions", json={"environment": "rs"})).json()
        run = "/v1/sessions/{}/features/shell/run"
        await http.post(run.format(active["id"]), json={"command": "echo one > f; cd /tmp"})
        await http.post(run.format(sleeping["id"]), json={"command": "echo two > f"})
        assert (await http.post(f"/v1/sessions/{sleeping['id']}/suspend")).status_code == 200
        # a session being created (a container starting) when the service dies
        inflight = asyncio.ensure_future(http.post("/v1/sessions", json={"environment": "rs"}))
        await asyncio.sleep(0.15)
        server.stop(signal.SIGKILL)
        with pytest.raises(httpx.TransportError):
            await inflight

    server.start()
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
        listed = {s["id"]: s["status"] for s in (await http.get("/v1/sessions")).json()}
        assert listed[active["id"]] == "active" and listed[sleeping["id"]] == "suspended"
        for sid, content in ((active["id"], "one"), (sleeping["id"], "two")):
            resumed = await http.post(f"/v1/sessions/{sid}/resume")
            assert resumed.status_code == 200, resumed.text
            out = (await http.post(run.format(sid), json={"command": "cat /workspace/f"})).json()
            assert out["stdout"] == f"{content}\n"
        out = (await http.post(run.format(active["id"]), json={"command": "pwd"})).json()
        assert out["stdout"] == "/tmp\n"  # the shell state outlived the service

    docker = aiodocker.Docker()
    try:
        containers = await docker.containers.list(
            all=True, filters={"label": [f"dev.sandlot.instance={RESTART_INSTANCE}"]}
        )
        labelled = {c._container["Labels"]["dev.sandlot.sandbox"] for c in containers}
    finally:
        await docker.close()
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch("SELECT id, status FROM sandboxes WHERE id = ANY($1::text[])", list(labelled))
    finally:
        await conn.close()
    known = {r["id"] for r in rows if r["status"] != "offline"}
    assert labelled and labelled <= known, labelled - known
