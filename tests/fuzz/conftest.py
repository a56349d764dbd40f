"""The fuzzing suite's server, keys and cleanup: a real ``sandlot serve`` on the test database
(the integration suite's ``live_server``), one tenant with a small sandbox quota (the fuzzer
cannot start more containers than that at a time), an operator, and at the end every sandbox,
session and environment the fuzzer made removed through the API, then checked gone in Docker."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable

import aiodocker
import httpx
import pytest

from sandlot.runtime.base import LABEL_TENANT
from sandlot.services.accounts import AccountService
from tests.conftest import BUSYBOX
from tests.integration.conftest import accounts, live_server

__all__ = ["FuzzKeys", "Seeds", "accounts", "fuzz_keys", "live_server", "seeded", "seeds"]

#: The fuzz tenant's quota: enough for a sandbox, a session and a pool member at once.
MAX_SANDBOXES = 3


class FuzzKeys:
    """The headers each credential sends, and who the fuzz tenant is."""

    def __init__(self, tenant_id: str, tenant: str, operator: str) -> None:
        self.tenant_id = tenant_id
        self.headers: dict[str, dict[str, str]] = {
            "tenant": {"Authorization": f"Bearer {tenant}"},
            "operator": {"Authorization": f"Bearer {operator}"},
            # the shape of a real key, but no such key
            "wrong": {"Authorization": f"Bearer sk_{secrets.token_urlsafe(32)}"},
            "none": {},
        }


@pytest.fixture(scope="session")
async def fuzz_keys(accounts: AccountService, live_server: str) -> AsyncIterator[FuzzKeys]:
    tenant = await accounts.create_tenant(f"fuzz-{secrets.token_hex(4)}", max_sandboxes=MAX_SANDBOXES)
    key = await accounts.create_key(tenant.id)
    ops = await accounts.create_tenant(f"fuzz-ops-{secrets.token_hex(4)}")
    operator = await accounts.create_key(ops.id, operator=True)
    keys = FuzzKeys(tenant.id, key.plaintext, operator.plaintext)
    yield keys
    await _clean_up(live_server, keys.headers["operator"], {tenant.id, ops.id})


async def _clean_up(url: str, operator: dict[str, str], tenants: set[str]) -> None:
    """End the fuzz tenants' sessions, delete their sandboxes and environments (the operator
    sees every tenant's; the operator's own tenant may have made some too), then check that
    Docker holds no container of theirs."""
    async with httpx.AsyncClient(base_url=url, headers=operator, timeout=120) as http:
        for path in ("/v1/sessions", "/v1/sandboxes", "/v1/environments"):
            for row in await _all(http, path):
                if row["tenant_id"] in tenants:
                    resp = await http.delete(f"{path}/{row.get('name') or row['id']}")
                    assert resp.status_code in (204, 404, 409), (path, resp.text)
    docker = aiodocker.Docker()
    try:
        left = await docker.containers.list(all=True, filters={"label": [LABEL_TENANT]})
        mine = [c.id for c in left if c._container.get("Labels", {}).get(LABEL_TENANT) in tenants]
        for cid in mine:  # removed all the same, so that a failure here leaves nothing behind
            await docker.containers.container(cid).delete(force=True, v=True)
    finally:
        await docker.close()
    assert not mine, f"the fuzzer's containers outlived its cleanup: {mine}"


async def _all(http: httpx.AsyncClient, path: str) -> list[dict]:
    """Every row of a list endpoint, page by page."""
    rows: list[dict] = []
    while True:
        resp = await http.get(path, params={"limit": 1000, "offset": len(rows)})
        assert resp.status_code == 200, resp.text
        page = list(resp.json())
        rows += page
        if len(page) < 1000 or path == "/v1/environments":  # environments come in one page
            return rows


class Seeds:
    """Real resources of the fuzz tenant, so that generated requests reach past the 404 of an
    unknown id: path parameters are drawn from these as well as generated."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        self.url = url
        self.headers = headers
        self.ids: dict[str, str] = {"feature": "shell", "activity": "run"}

    async def heal(self) -> dict[str, str]:
        """Make (or remake) what an earlier test deleted, ended or suspended."""
        async with httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=120) as http:
            ids = self.ids
            if (await http.get(f"/v1/environments/{ids.get('environment', '-')}")).status_code != 200:
                env = f"fuzz-{secrets.token_hex(3)}"
                await _made(http.post("/v1/environments", json={"name": env, "images": [BUSYBOX]}))
                ids["environment"] = env
            await _make_room(
                http, keep={ids.get("session_id"), ids.get("sandbox_id"), ids.get("its_sandbox")}
            )
            if not await _alive(http, f"/v1/sessions/{ids.get('session_id', '-')}", "active"):
                body = {"environment": ids["environment"]}
                session = await _made(http.post("/v1/sessions", json=body))
                ids["session_id"], ids["its_sandbox"] = session["id"], session["sandbox_id"]
                ids["process_id"] = (
                    await _made(
                        http.post(f"/v1/sessions/{ids['session_id']}/processes", json={"command": "echo hi"})
                    )
                )["id"]
                snapshot = http.post(f"/v1/sessions/{ids['session_id']}/checkpoints")
                ids["snapshot_id"] = (await _made(snapshot))["id"]
            if not await _alive(http, f"/v1/sandboxes/{ids.get('sandbox_id', '-')}", "ready"):
                ids["sandbox_id"] = (await _made(http.post("/v1/sandboxes", json={})))["id"]
            if (await http.get(f"/v1/assets/{ids.get('name', '-')}")).status_code != 200:
                ids["name"] = f"fuzz-{secrets.token_hex(3)}"
                await _made(http.put(f"/v1/assets/{ids['name']}", content=b"asset"))
            return dict(ids)


async def _make_room(http: httpx.AsyncClient, keep: set[str | None]) -> None:
    """End the sessions and delete the sandboxes the fuzzer made (the quota is small)."""
    for path in ("/v1/sessions", "/v1/sandboxes"):
        for row in await _all(http, path):
            if row["id"] not in keep and row["status"] not in ("ended", "offline", "shutting_down"):
                await http.delete(f"{path}/{row['id']}")


async def _alive(http: httpx.AsyncClient, path: str, status: str) -> bool:
    resp = await http.get(path)
    if resp.status_code == 200 and resp.json()["status"] == "suspended":
        resp = await http.post(f"{path}/resume")
        return resp.status_code == 200 and bool(resp.json()["session"]["status"] == status)
    return resp.status_code == 200 and bool(resp.json()["status"] == status)


async def _made(request: Awaitable[httpx.Response]) -> dict:
    resp = await request
    assert resp.status_code in (200, 201), resp.text
    return dict(resp.json())


@pytest.fixture(scope="session")
async def seeds(fuzz_keys: FuzzKeys, live_server: str) -> Seeds:
    return Seeds(live_server, fuzz_keys.headers["tenant"])


@pytest.fixture
async def seeded(seeds: Seeds) -> dict[str, str]:
    """The seeds' ids, healed for this test."""
    return await seeds.heal()
