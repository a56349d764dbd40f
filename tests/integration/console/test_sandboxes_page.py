"""The console's sandboxes page: a tenant sees and kills only its own sandboxes; kills need
the CSRF token; bulk kill skips ids that are not the caller's."""

from __future__ import annotations

import asyncio
import re
import secrets
import time

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import NewTenant, key_of
from tests.support.console import page_token, sign_in


async def test_a_tenant_sees_and_kills_only_its_own_sandboxes(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    mine = [
        (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)).json()["id"]
        for _ in range(3)
    ]
    theirs = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=bob)).json()["id"]
    try:
        await sign_in(browser, key_of(alice))
        page = await browser.get("/console/sandboxes/")
        assert page.status_code == 200
        assert all(f"row-{s}" in page.text for s in mine) and theirs not in page.text
        rows = await browser.get("/console/sandboxes/rows", params={"status": "ready"})
        assert all(s in rows.text for s in mine) and theirs not in rows.text
        assert (
            "No sandboxes match"
            in (await browser.get("/console/sandboxes/rows", params={"image": "nope"})).text
        )
        detail = await browser.get(f"/console/sandboxes/{mine[0]}")
        assert (
            detail.status_code == 200
            and "Status history" in detail.text
            and "container started" in detail.text
        )
        assert (await browser.get(f"/console/sandboxes/{theirs}")).status_code == 404
        # CPU and memory now, measured by the engine; another tenant's sandbox is not found
        assert 'hx-get="/console/sandboxes/' + mine[0] + '/usage"' in detail.text
        usage = await browser.get(f"/console/sandboxes/{mine[0]}/usage")
        assert usage.status_code == 200 and 'data-testid="usage-memory"' in usage.text, usage.text
        assert re.search(r"[0-9.]+ MB of 512 MB", usage.text), usage.text
        assert (await browser.get(f"/console/sandboxes/{theirs}/usage")).status_code == 404
        headers = {"x-csrftoken": page_token(page.text), "HX-Request": "true"}

        # without the token: refused, nothing killed
        assert (await browser.post(f"/console/sandboxes/{mine[0]}/kill")).status_code == 403
        # another tenant's sandbox: not found, and it lives on
        assert (await browser.post(f"/console/sandboxes/{theirs}/kill", headers=headers)).status_code == 404
        one = await browser.post(f"/console/sandboxes/{mine[0]}/kill", headers=headers)
        assert one.status_code == 200 and 'id="rows"' in one.text
        bulk = await browser.post(
            "/console/sandboxes/kill", data={"ids": [mine[1], mine[2], theirs]}, headers=headers
        )
        assert bulk.status_code == 200
        for sid in mine:
            assert (await client.get(f"/v1/sandboxes/{sid}", headers=alice)).json()["status"] == "offline"
        # an offline sandbox: said so, never an error page
        gone = await browser.get(f"/console/sandboxes/{mine[0]}/usage")
        assert gone.status_code == 200 and "Not measurable now" in gone.text
        assert "Offline: nothing runs" in (await browser.get(f"/console/sandboxes/{mine[0]}")).text
        assert (await client.get(f"/v1/sandboxes/{theirs}", headers=bob)).json()["status"] == "ready"
    finally:
        for sid, h in [*((s, alice) for s in mine), (theirs, bob)]:
            await client.delete(f"/v1/sandboxes/{sid}", headers=h)


async def test_drain_takes_only_idle_pool_sandboxes_out_of_their_pool(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    env = f"drain-{secrets.token_hex(3)}"
    body = {"name": env, "images": [BUSYBOX], "pool_size": [1, 1]}
    assert (await client.post("/v1/environments", json=body, headers=alice)).status_code == 201
    loose = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)).json()["id"]
    bobs = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=bob)).json()["id"]
    try:
        deadline = time.monotonic() + 60
        while True:
            rows = (await client.get("/v1/sandboxes", params={"status": "ready"}, headers=alice)).json()
            pooled = [r["id"] for r in rows if r["environment_id"]]
            if pooled:
                break
            assert time.monotonic() < deadline, "the pool did not fill"
            await asyncio.sleep(0.3)
        await sign_in(browser, key_of(alice))
        token = page_token((await browser.get("/console/sandboxes/")).text)
        drained = await browser.post(
            "/console/sandboxes/drain",
            data={"ids": [pooled[0], loose, bobs]},
            headers={"x-csrftoken": token, "HX-Request": "true"},
        )
        assert drained.status_code == 200
        gone = (await client.get(f"/v1/sandboxes/{pooled[0]}", headers=alice)).json()
        assert gone["status"] == "offline" and gone["status_reason"] == "drained from the pool"
        # a sandbox of no pool, and another tenant's, are left alone
        assert (await client.get(f"/v1/sandboxes/{loose}", headers=alice)).json()["status"] == "ready"
        assert (await client.get(f"/v1/sandboxes/{bobs}", headers=bob)).json()["status"] == "ready"
    finally:
        await client.delete(f"/v1/environments/{env}", headers=alice)
        await client.delete(f"/v1/sandboxes/{loose}", headers=alice)
        await client.delete(f"/v1/sandboxes/{bobs}", headers=bob)


async def _pool_member(client: AsyncTestClient, headers: dict[str, str], env_id: str) -> dict[str, str]:
    deadline = time.monotonic() + 60
    while True:
        rows = (await client.get("/v1/sandboxes", params={"status": "ready"}, headers=headers)).json()
        pooled = [r for r in rows if r["environment_id"] == env_id]
        if pooled:
            return pooled[0]
        assert time.monotonic() < deadline, "the pool did not fill"
        await asyncio.sleep(0.3)


async def test_the_table_filters_by_tenant_environment_and_age(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant, operator: dict[str, str]
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    env = f"filter-{secrets.token_hex(3)}"
    body = {"name": env, "images": [BUSYBOX], "pool_size": [1, 1]}
    env_id = (await client.post("/v1/environments", json=body, headers=alice)).json()["id"]
    loose = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)).json()
    bobs = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=bob)).json()
    try:
        pooled = await _pool_member(client, alice, env_id)
        await sign_in(browser, key_of(operator))

        async def shown(**params: str) -> set[str]:
            page = (await browser.get("/console/sandboxes/rows", params=params)).text
            return {s for s in (loose["id"], pooled["id"], bobs["id"]) if f"row-{s}" in page}

        page = await browser.get("/console/sandboxes/", params={"tenant": loose["tenant_id"]})
        assert page.status_code == 200 and f'value="{env_id}"' in page.text
        assert await shown(tenant=loose["tenant_id"]) == {loose["id"], pooled["id"]}
        assert await shown(tenant=bobs["tenant_id"]) == {bobs["id"]}
        assert await shown(environment=env_id) == {pooled["id"]}
        assert await shown(age="5m", tenant=loose["tenant_id"]) == {loose["id"], pooled["id"]}
        assert await shown(age="old", tenant=loose["tenant_id"]) == set()
        # a hostile or unknown filter value is no filter, never an error
        assert len(await shown(age="'; drop", environment="../x", tenant="a b")) == 3
        nul = await browser.get("/console/sandboxes/rows", params={"tenant": "\x00"})
        assert 400 <= nul.status_code < 500
        # a tenant's own console ignores the tenant filter: it sees only its own
        await sign_in(browser, key_of(bob))
        assert await shown(tenant=loose["tenant_id"]) == {bobs["id"]}
        assert await shown(environment=env_id) == set()
    finally:
        await client.delete(f"/v1/environments/{env}", headers=alice)
        await client.delete(f"/v1/sandboxes/{loose['id']}", headers=alice)
        await client.delete(f"/v1/sandboxes/{bobs['id']}", headers=bob)
