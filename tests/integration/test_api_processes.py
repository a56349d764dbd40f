"""Several API processes on one database, and a service restart."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from tests.conftest import BUSYBOX, INSTANCE
from tests.integration.servers import Server


@pytest.fixture
async def tenant_key(accounts: AccountService) -> str:
    tenant = await accounts.create_tenant(
        f"multi-{secrets.token_hex(3)}",
        max_sandboxes=200,
        max_memory_mb=1 << 20,
        max_cpus=1000,
        max_sessions=200,
        max_disk_mb=1 << 30,
    )
    return (await accounts.create_key(tenant.id)).plaintext


@pytest.fixture
def two_servers(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    """Two ``sandlot serve`` processes sharing the test database (and so its instance)."""
    servers = []
    for i in range(2):
        data = tmp_path_factory.mktemp(f"srv{i}")
        settings = {
            "SANDLOT_DATABASE_URL": pg_url,
            "SANDLOT_INSTANCE": INSTANCE,
            "SANDLOT_RUNTIME": "docker",
            "SANDLOT_DATA_DIR": str(data),
            "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
            "SANDLOT_POOL_INTERVAL": "0.3",
            # every process of the run shares one PostgreSQL's 100 connections
            "SANDLOT_DATABASE_POOL_SIZE": "5",
            "SANDLOT_DATABASE_MAX_OVERFLOW": "20",
        }
        # bounded by the test's own 240 s limit: a server accepts connections long before it answers
        servers.append(Server(settings, data / "server.log", args=["--json"], timeout=240, grace=15))
    try:
        for server in servers:
            server.start(wait=False)  # both start at once
        for server in servers:
            server.wait_ready()
        yield [server.url for server in servers]
    finally:
        for server in servers:
            server.stop()


@pytest.mark.timeout(240)
async def test_two_api_processes_never_hand_out_the_same_sandbox(
    two_servers: list[str], tenant_key: str
) -> None:
    h = {"Authorization": f"Bearer {tenant_key}"}
    name = f"race-{secrets.token_hex(3)}"
    async with httpx.AsyncClient(headers=h, timeout=120) as http:
        env = await http.post(
            f"{two_servers[0]}/v1/environments",
            json={
                "name": name,
                "images": [BUSYBOX],
                "pool_size": [50, 50],
                "memory_mb": 32,
                "cpus": 0.1,
                "housekeeping_interval_seconds": 0.3,
            },
        )
        assert env.status_code == 201, env.text
        env_id = env.json()["id"]

        for _ in range(900):
            rows = (
                await http.get(f"{two_servers[1]}/v1/sandboxes", params={"status": "ready", "limit": 1000})
            ).json()
            if sum(r["environment_id"] == env_id for r in rows) >= 50:
                break
            await asyncio.sleep(0.2)
        else:
            pytest.fail("the pool did not warm to 50")

        async def start(i: int) -> dict:
            resp = await http.post(f"{two_servers[i % 2]}/v1/sessions", json={"environment": name})
            assert resp.status_code == 201, resp.text
            return resp.json()

        sessions = await asyncio.gather(*(start(i) for i in range(50)))
        sandboxes = [s["sandbox_id"] for s in sessions]
        assert len(set(sandboxes)) == 50, "a sandbox was handed out twice"
        assert all(s["warm"] for s in sessions)
        await asyncio.gather(
            *(http.delete(f"{two_servers[i % 2]}/v1/sessions/{s['id']}") for i, s in enumerate(sessions))
        )
        await http.delete(f"{two_servers[0]}/v1/environments/{env_id}")


@pytest.fixture
async def restartable(app_settings: Settings) -> AsyncIterator[Settings]:
    yield app_settings.model_copy(update={"pool_interval": 0.2})


async def test_a_restarted_service_readopts_its_warm_pool(restartable: Settings, tenant_key: str) -> None:
    h = {"Authorization": f"Bearer {tenant_key}"}
    name = f"adopt-{secrets.token_hex(3)}"

    async def ready_members(client: AsyncTestClient, env_id: str) -> dict[str, str]:
        rows = (await client.get("/v1/sandboxes", params={"limit": 1000}, headers=h)).json()
        return {r["id"]: r["status"] for r in rows if r["environment_id"] == env_id}

    async with AsyncTestClient(create_app(restartable), timeout=60) as first:
        env = await first.post(
            "/v1/environments",
            json={
                "name": name,
                "images": [BUSYBOX],
                "pool_size": [2, 2],
                "housekeeping_interval_seconds": 0.2,
            },
            headers=h,
        )
        env_id = env.json()["id"]
        for _ in range(200):
            members = await ready_members(first, env_id)
            if sorted(members.values()) == ["ready", "ready"]:
                break
            await asyncio.sleep(0.1)
        else:
            pytest.fail("pool did not warm")
    before = members

    async with AsyncTestClient(create_app(restartable), timeout=60) as second:
        await asyncio.sleep(1.5)  # reconcile plus several pool rounds
        after = await ready_members(second, env_id)
        assert after == before, "the restarted service replaced its warm sandboxes"
        session = (await second.post("/v1/sessions", json={"environment": name}, headers=h)).json()
        assert session["warm"] is True and session["sandbox_id"] in before
        await second.delete(f"/v1/sessions/{session['id']}", headers=h)
        await second.delete(f"/v1/environments/{env_id}", headers=h)
