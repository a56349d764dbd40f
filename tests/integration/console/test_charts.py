"""The overview's charts: the last hour a minute at a time, from the store, scoped to the
caller's tenant: a cold and a warm acquire and shell commands show up in the right series."""

from __future__ import annotations

import asyncio
import secrets
import time

from litestar.testing import AsyncTestClient

from sandlot.services.charts import MINUTES
from tests.conftest import BUSYBOX
from tests.integration.conftest import NewTenant, key_of
from tests.support.console import csrf, sign_in


async def test_charts_count_acquires_and_commands_of_the_callers_tenant(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    env = f"charts-{secrets.token_hex(3)}"
    body = {"name": env, "images": [BUSYBOX], "pool_size": [1, 1]}
    assert (await client.post("/v1/environments", json=body, headers=alice)).status_code == 201
    deadline = time.monotonic() + 60
    while not [
        r for r in (await client.get("/v1/sandboxes", headers=alice)).json() if r["status"] == "ready"
    ]:
        assert time.monotonic() < deadline, "the pool did not fill"
        await asyncio.sleep(0.3)
    cold_env = f"{env}-cold"
    body = {"name": cold_env, "images": [BUSYBOX], "pool_size": 0}
    assert (await client.post("/v1/environments", json=body, headers=alice)).status_code == 201
    ids = []
    for name in (env, cold_env):  # the warm sandbox of the pool, then one created on demand
        started = await client.post("/v1/sessions", json={"environment": name}, headers=alice)
        assert started.status_code == 201
        ids.append(started.json()["id"])
    for _ in range(3):
        run = await client.post(
            f"/v1/sessions/{ids[0]}/features/shell/run", json={"command": "true"}, headers=alice
        )
        assert run.status_code == 200
    try:
        await sign_in(browser, key_of(alice))
        deadline = time.monotonic() + 30
        while True:  # activity records are written in batches
            data = (await browser.get("/console/fragments/charts")).json()
            if sum(x is not None for x in data["p50"]):
                break
            assert time.monotonic() < deadline, data
            await asyncio.sleep(0.5)
        assert len(data["t"]) == MINUTES and all(len(data[k]) == MINUTES for k in data)
        assert data["t"] == sorted(data["t"]) and data["t"][1] - data["t"][0] == 60
        assert sum(data["warm"]) >= 1 and sum(data["cold"]) >= 1
        assert data["running"][-1] >= 2
        assert all(v is None or v >= 0 for v in data["p50"] + data["p99"])

        # bob's console counts none of it
        form = await browser.get("/console/")
        assert 'id="charts"' in form.text
        await browser.post("/console/logout", data={"_csrf_token": csrf(form.text)})
        await sign_in(browser, key_of(bob))
        theirs = (await browser.get("/console/fragments/charts")).json()
        assert sum(theirs["warm"]) == sum(theirs["cold"]) == 0 and theirs["running"][-1] == 0
        assert all(v is None for v in theirs["p50"])
    finally:
        for sid in ids:
            await client.delete(f"/v1/sessions/{sid}", headers=alice)
        for name in (env, cold_env):
            await client.delete(f"/v1/environments/{name}", headers=alice)
