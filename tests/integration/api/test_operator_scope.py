"""An operator sees every tenant's objects; what it names must still reach the one object it
meant (issue #27, findings 2 and 3). An id always names its own object (no name may look like
one), a name two tenants use names neither for an operator, and a session start whose
environment, snapshot and assets belong to different tenants is refused. Each test failed on
the code before: a tenant could name its environment after another's id (201), an operator's
look-up by a shared name answered one of the two (200), and a start with tenant C's snapshot
in tenant B's environment put C's files in B's session (201)."""

from __future__ import annotations

import secrets

from litestar.testing import AsyncTestClient

from tests.integration.conftest import Api, Headers, NewTenant


async def test_a_name_may_not_look_like_an_id(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    b, c = Api(client, await new_tenant()), Api(client, await new_tenant())
    theirs = await c.env()
    resp = await client.post(
        "/v1/environments", json={"name": theirs["id"], "images": ["sandlot/busybox:latest"]}, headers=b.h
    )
    assert resp.status_code == 422 and resp.json()["field"] == "name", resp.text
    assert "looks like an id" in resp.json()["detail"]


async def test_an_operator_reaches_an_environment_by_id_and_never_by_a_shared_name(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    b, c = Api(client, await new_tenant()), Api(client, await new_tenant())
    name = f"shared-{secrets.token_hex(3)}"
    mine, theirs = await b.env(name=name), await c.env(name=name)
    for env in (mine, theirs):
        got = await client.get(f"/v1/environments/{env['id']}", headers=operator)
        assert got.status_code == 200 and got.json()["id"] == env["id"], got.text
        changed = await client.patch(f"/v1/environments/{env['id']}", json={"pids": 77}, headers=operator)
        assert changed.status_code == 200 and changed.json()["id"] == env["id"], changed.text
    for method in ("GET", "PATCH", "DELETE"):
        body = {"json": {"pids": 99}} if method == "PATCH" else {}
        resp = await client.request(method, f"/v1/environments/{name}", headers=operator, **body)  # type: ignore[arg-type]
        assert resp.status_code == 422 and "name it by its id" in resp.json()["detail"], (method, resp.text)
    for tenant, env in ((b, mine), (c, theirs)):  # each tenant's own name still works, untouched
        own = await client.get(f"/v1/environments/{name}", headers=tenant.h)
        assert own.status_code == 200 and own.json()["id"] == env["id"] and own.json()["pids"] == 77


async def test_an_operators_session_start_names_one_tenants_objects(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    b, c = Api(client, await new_tenant()), Api(client, await new_tenant())
    b_env, c_env = await b.env(), await c.env()
    sess = await c.session(c_env["name"])
    await c.sh(sess["id"], "echo secret-of-c > /workspace/c.txt")
    made = await client.post(f"/v1/sessions/{sess['id']}/checkpoints", headers=c.h)
    assert made.status_code == 201, made.text
    snap = made.json()["id"]
    await c.end(sess["id"])
    mixed = await client.post(
        "/v1/sessions", json={"environment": b_env["id"], "snapshot_id": snap}, headers=operator
    )
    assert mixed.status_code == 422 and mixed.json()["field"] == "snapshot_id", mixed.text
    assert (await client.get("/v1/sessions", headers=b.h)).json() == []  # nothing started for B
    same = await client.post(
        "/v1/sessions", json={"environment": c_env["id"], "snapshot_id": snap}, headers=operator
    )
    assert same.status_code == 201, same.text
    assert (await c.sh(same.json()["id"], "cat /workspace/c.txt"))["stdout"] == "secret-of-c\n"
    await c.end(same.json()["id"])
