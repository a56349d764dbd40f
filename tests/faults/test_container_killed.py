"""Fault: a sandbox's container killed or removed behind the service's back.

The periodic reconciler (every second here) takes the sandbox offline and ends the session
that held it as "sandbox lost"; requests on it get clear codes; a request that meets the dead
container first gets a clear code too; nothing acknowledged is lost and new work runs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import aiodocker
import httpx
import pytest

from tests.conftest import BUSYBOX
from tests.faults.conftest import (
    HASHES,
    assert_clear,
    assert_restores,
    fault_server,
    instance,
    new_session,
    sh,
    tenant_headers,
    wait_agreement,
)


async def _kill(sandbox_id: str, *, remove: bool) -> None:
    docker = aiodocker.Docker()
    try:
        container = await docker.containers.get(f"sandlot-{sandbox_id}")
        if remove:
            await container.delete(force=True, v=True)
        else:
            await container.kill()
    finally:
        await docker.close()


async def _until(http: httpx.AsyncClient, path: str, field: str, value: str, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while (body := (await http.get(path)).json())[field] != value:
        assert time.monotonic() < deadline, body
        await asyncio.sleep(0.3)


@pytest.mark.timeout(150)
async def test_a_container_killed_behind_the_service_is_reconciled_and_answered_clearly(
    db_url: str, tmp_path: Path
) -> None:
    mine = instance("kill")
    headers = await tenant_headers(db_url)
    with fault_server(db_url, mine, tmp_path / "data") as server:
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
            env = await http.post("/v1/environments", json={"name": "k", "images": [BUSYBOX]})
            assert env.status_code == 201, env.text
            quiet, eager = await new_session(http, "k"), await new_session(http, "k")
            await sh(http, quiet, "head -c 300000 /dev/urandom > data.bin; mkdir d; echo hi > d/x")
            snap = await http.post(f"/v1/sessions/{quiet}/checkpoints")
            assert snap.status_code == 201, snap.text
            acked = {snap.json()["id"]: await sh(http, quiet, HASHES)}
            direct = await http.post("/v1/sandboxes", json={"image": BUSYBOX})
            assert direct.status_code == 201, direct.text
            box = direct.json()["id"]
            held = {s: (await http.get(f"/v1/sessions/{s}")).json()["sandbox_id"] for s in (quiet, eager)}

            await _kill(held[quiet], remove=False)
            await _kill(box, remove=True)
            await _kill(held[eager], remove=True)
            # a request that meets a dead container: a clear code, and its session is over
            met = await http.post(f"/v1/sessions/{eager}/features/shell/run", json={"command": "true"})
            assert_clear(met)
            assert met.status_code in (409, 502, 503), met.text
            # the reconciler settles the ones nobody asked about
            await _until(http, f"/v1/sessions/{quiet}", "status", "ended")
            await _until(http, f"/v1/sandboxes/{box}", "status", "offline")
            ended = (await http.get(f"/v1/sessions/{quiet}")).json()
            assert "lost" in ended["end_reason"], ended
            for resp in (
                await http.post(f"/v1/sessions/{quiet}/features/shell/run", json={"command": "true"}),
                await http.post(f"/v1/sessions/{quiet}/checkpoints"),
                await http.post(f"/v1/sandboxes/{box}/exec", json={"command": "true"}),
            ):
                assert 400 <= resp.status_code < 600, resp.text
                assert_clear(resp)
            assert (await http.get("/readyz")).status_code == 200

            await wait_agreement(db_url, mine)
            await assert_restores(http, "k", acked)
            fresh = await new_session(http, "k")
            assert await sh(http, fresh, "echo again") == "again\n"
            await http.delete(f"/v1/sessions/{fresh}")
            await wait_agreement(db_url, mine)
