"""Tenant quotas: an operator sets them (API, CLI, console), and going over one is a 429 that
names the quota, its limit and what is in use, while another tenant is unaffected. Sandboxes
(count, memory, cpus, disk), the longest ttl, sessions (checked again once a session is
recorded, so concurrent starts cannot pass it together) and snapshot storage."""

from __future__ import annotations

import asyncio

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import Api, Headers, NewTenant


def _refused(answer: object, quota: str, limit: float, used: float) -> None:
    body = answer.json()  # type: ignore[attr-defined]
    assert answer.status_code == 429, answer.text  # type: ignore[attr-defined]
    assert (body["code"], body["quota"], body["limit"], body["used"]) == (
        "quota_exceeded",
        quota,
        limit,
        used,
    )
    assert quota in body["detail"]


async def test_sandbox_quotas_name_the_quota_and_spare_other_tenants(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    small = await new_tenant(max_sandboxes=1, max_disk_mb=100, max_ttl_seconds=60)
    other = await new_tenant()
    made: list[tuple[str, Headers]] = []
    try:
        long = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "ttl_seconds": 120}, headers=small)
        _refused(long, "ttl_seconds", 60, 120)
        big = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "disk_mb": 200}, headers=small)
        _refused(big, "disk_mb", 100, 0)
        first = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "disk_mb": 64}, headers=small)
        assert first.status_code == 201, first.text
        made.append((first.json()["id"], small))
        assert first.json()["ttl_seconds"] == 60  # the service's default ttl, within the tenant's
        second = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "disk_mb": 16}, headers=small)
        _refused(second, "sandboxes", 1, 1)
        theirs = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=other)
        assert theirs.status_code == 201, theirs.text
        made.append((theirs.json()["id"], other))
    finally:
        for sid, headers in made:
            await client.delete(f"/v1/sandboxes/{sid}", headers=headers)


async def test_sessions_quota_holds_under_concurrent_starts(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = Api(client, await new_tenant(max_sessions=2))
    env = await api.env(pool_size=0)
    answers = await asyncio.gather(
        *(client.post("/v1/sessions", json={"environment": env["name"]}, headers=api.h) for _ in range(4))
    )
    started = [a.json()["id"] for a in answers if a.status_code == 201]
    try:
        assert 1 <= len(started) <= 2, [a.text for a in answers]
        assert {a.status_code for a in answers} <= {201, 429}
        refused = [a.json() for a in answers if a.status_code == 429]
        assert all(r["quota"] == "sessions" and r["limit"] == 2 for r in refused)
        for sid in started:
            await api.end(sid)
        again = await api.session(env["name"])  # ended sessions no longer count
        started = [again["id"]]
    finally:
        for sid in started:
            await client.delete(f"/v1/sessions/{sid}", headers=api.h)
        await client.delete(f"/v1/environments/{env['name']}", headers=api.h)


async def test_snapshot_storage_quota_refuses_the_next_checkpoint(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = Api(client, await new_tenant(max_snapshot_mb=2))
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    try:
        await api.sh(s["id"], "head -c 1500000 /dev/urandom > noise")
        first = await client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)
        assert first.status_code == 201, first.text
        # what the next one adds counts: 1.5 MB kept and 1.5 MB more do not fit in 2
        await api.sh(s["id"], "head -c 1500000 /dev/urandom > more")
        second = await client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)
        body = second.json()
        assert second.status_code == 429 and body["quota"] == "snapshot_mb" and body["used"] >= 1.4, body
        assert (await api.sh(s["id"], "echo still usable"))["stdout"] == "still usable\n"
    finally:
        await api.end(s["id"])
        await client.delete(f"/v1/environments/{env['name']}", headers=api.h)


async def test_operators_change_quotas_and_tenants_read_their_usage(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    alice, bob = await new_tenant(max_sandboxes=0), await new_tenant()
    tenant = (await client.get("/v1/tenants", headers=alice)).json()[0]
    assert tenant["max_sandboxes"] == 0 and tenant["max_sessions"] == 20
    refused = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)
    _refused(refused, "sandboxes", 0, 0)
    # a tenant cannot raise its own quota
    own = await client.patch(f"/v1/tenants/{tenant['id']}", json={"max_sandboxes": 9}, headers=alice)
    assert own.status_code == 403
    theirs = await client.patch(f"/v1/tenants/{tenant['id']}", json={"max_sandboxes": 9}, headers=bob)
    assert theirs.status_code == 404  # another tenant's: not found, as everything of theirs
    raised = await client.patch(
        f"/v1/tenants/{tenant['name']}", json={"max_sandboxes": 2, "max_ttl_seconds": 0}, headers=operator
    )
    assert raised.status_code == 200 and raised.json()["max_sandboxes"] == 2, raised.text
    assert raised.json()["max_ttl_seconds"] is None
    bad = await client.patch(f"/v1/tenants/{tenant['id']}", json={"max_cpus": -1}, headers=operator)
    assert bad.status_code == 422
    made = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)
    assert made.status_code == 201, made.text
    try:
        usage = await client.get(f"/v1/tenants/{tenant['id']}/usage", headers=alice)
        assert usage.status_code == 200 and usage.json()["sandboxes"] == 1, usage.text
        assert usage.json()["memory_mb"] == made.json()["memory_mb"]
        # another tenant's usage is not found, as everything of another tenant's
        assert (await client.get(f"/v1/tenants/{tenant['id']}/usage", headers=bob)).status_code == 404
    finally:
        await client.delete(f"/v1/sandboxes/{made.json()['id']}", headers=alice)


async def _ready_by_environment(api: Api) -> dict[str, int]:
    rows = (await api.client.get("/v1/sandboxes", params={"status": "ready"}, headers=api.h)).json()
    found: dict[str, int] = {}
    for row in rows:
        found[row["environment_id"]] = found.get(row["environment_id"], 0) + 1
    return found


async def test_a_start_its_own_idle_pools_crowd_out_takes_one_of_them_down_first(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    """#28.5: idle warm members count against their tenant's quota, and an idle pool stays at
    the size its busiest moment took it to: two pools full of idle members refused every start
    elsewhere with 429, nothing in use. A start takes down the longest idle member held beyond
    its pool's minimum first; none is taken below its minimum."""
    api = Api(client, await new_tenant(max_cpus=4))
    pools = [await api.env(pool_size=[1, 2]) for _ in range(2)]
    for env in pools:  # each pool taken to its maximum, then left idle
        sessions = [await api.session(env["name"]) for _ in range(2)]
        for session in sessions:
            await api.end(session["id"])
    for _ in range(300):
        if sorted((await _ready_by_environment(api)).values()) == [2, 2]:
            break
        await asyncio.sleep(0.1)
    assert sorted((await _ready_by_environment(api)).values()) == [2, 2]  # 4 CPUs held, idle
    elsewhere = await api.env(pool_size=0)
    started = [await client.post("/v1/sessions", json={"environment": elsewhere["name"]}, headers=api.h)]
    assert started[0].status_code == 201, started[0].text  # was 429: cpus
    started.append(await client.post("/v1/sessions", json={"environment": elsewhere["name"]}, headers=api.h))
    assert started[1].status_code == 201, started[1].text
    ready = await _ready_by_environment(api)
    assert [ready.get(env["id"]) for env in pools] == [1, 1]  # each pool at its minimum
    third = await client.post("/v1/sessions", json={"environment": elsewhere["name"]}, headers=api.h)
    _refused(third, "cpus", 4, 4)  # nothing beyond a minimum left to give way
    for resp in started:
        await api.end(resp.json()["id"])
