"""Limits that used to multiply (#27, finding 5): a tenant key minted keys without end, each with
a rate-limit bucket of its own; environments had no cap; concurrent checkpoints all passed a
snapshot quota checked before any of them was stored. Keys and environments are tenant quotas
now, the tenant has a rate bucket all its keys draw from, and a checkpoint's own new contents
are counted under the tenant's lock when it is recorded."""

from __future__ import annotations

import asyncio
from pathlib import Path

from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.integration.conftest import Api, NewTenant


def _quota(answer: object, quota: str) -> dict:
    body = answer.json()  # type: ignore[attr-defined]
    assert answer.status_code == 429, answer.text  # type: ignore[attr-defined]
    assert (body["code"], body["quota"]) == ("quota_exceeded", quota), body
    return body


async def test_a_tenant_key_mints_keys_up_to_its_tenants_quota(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant(max_keys=3)  # the key new_tenant made is one of them
    made = [await client.post("/v1/keys", json={"name": f"k{i}"}, headers=h) for i in range(2)]
    assert [m.status_code for m in made] == [201, 201], [m.text for m in made]
    body = _quota(await client.post("/v1/keys", json={"name": "one too many"}, headers=h), "keys")
    assert (body["limit"], body["used"]) == (3, 3)
    # the minted keys cannot mint past it either; a revoked key frees its place
    minted = {"Authorization": f"Bearer {made[0].json()['secret']}"}
    _quota(await client.post("/v1/keys", json={"name": "via minted"}, headers=minted), "keys")
    gone = await client.delete(f"/v1/keys/{made[1].json()['key']['id']}", headers=h)
    assert gone.status_code in (200, 204), gone.text
    assert (await client.post("/v1/keys", json={"name": "again"}, headers=minted)).status_code == 201
    tenant = (await client.get("/v1/tenants", headers=h)).json()[0]
    usage = (await client.get(f"/v1/tenants/{tenant['id']}/usage", headers=h)).json()
    assert (tenant["max_keys"], usage["keys"]) == (3, 3)


async def test_environments_per_tenant_are_capped(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    api = Api(client, await new_tenant(max_environments=2))
    await api.env(pool_size=0)
    await api.env(pool_size=0)
    more = await client.post(
        "/v1/environments", json={"name": "third", "images": ["sandlot/busybox:latest"]}, headers=api.h
    )
    body = _quota(more, "environments")
    assert (body["limit"], body["used"]) == (2, 2)


async def test_more_keys_buy_no_more_requests(
    app_settings: Settings, tmp_path: Path, new_tenant: NewTenant
) -> None:
    burst = 10
    tight = app_settings.model_copy(
        update={"tenant_rate_limit_per_second": 0.5, "tenant_rate_limit_burst": burst, "data_dir": tmp_path}
    )
    h = await new_tenant()
    async with AsyncTestClient(create_app(tight), timeout=60) as c:
        keys = [h]
        for i in range(4):
            made = await c.post("/v1/keys", json={"name": f"k{i}"}, headers=h)
            assert made.status_code == 201, made.text
            keys.append({"Authorization": f"Bearer {made.json()['secret']}"})
        answers = await asyncio.gather(*(c.get("/v1/sandboxes", headers=keys[i % 5]) for i in range(50)))
        statuses = [a.status_code for a in answers]
        # five keys, each with a bucket of 1,000, and one tenant bucket of 10 (the minting took 4)
        assert statuses.count(200) <= burst - 4 + 1 and set(statuses) == {200, 429}, statuses
        refused = next(a for a in answers if a.status_code == 429).json()
        assert refused["code"] == "rate_limited" and "tenant" in refused["detail"]


async def test_concurrent_checkpoints_are_counted_each_with_its_own_size(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = Api(client, await new_tenant(max_snapshot_mb=20))
    env = await api.env(pool_size=0)
    sessions = [await api.session(env["name"]) for _ in range(4)]
    try:
        for s in sessions:  # 8 MiB each, each its own content
            await api.sh(s["id"], "head -c 8388608 /dev/urandom > noise")
        answers = await asyncio.gather(
            *(client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h) for s in sessions)
        )
        statuses = sorted(a.status_code for a in answers)
        assert statuses == [201, 201, 429, 429], [a.text for a in answers]  # 2 x 8 MiB fit in 20
        for refused in (a for a in answers if a.status_code == 429):
            assert refused.json()["quota"] == "snapshot_mb" and " adds " in refused.json()["detail"]
        tenant = (await client.get("/v1/tenants", headers=api.h)).json()[0]
        usage = (await client.get(f"/v1/tenants/{tenant['id']}/usage", headers=api.h)).json()
        assert 16 << 20 <= usage["snapshot_bytes"] <= 17 << 20, usage
    finally:
        for s in sessions:
            await api.end(s["id"])
