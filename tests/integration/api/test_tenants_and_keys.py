"""``/v1/tenants`` and ``/v1/keys``: operators manage tenants and every key; a tenant key sees
and manages only its own tenant's keys, and never grants more than it holds."""

from __future__ import annotations

import secrets

from litestar.testing import AsyncTestClient

from tests.integration.conftest import Headers, NewTenant


def _bearer(secret: str) -> Headers:
    return {"Authorization": f"Bearer {secret}"}


async def test_an_operator_creates_a_tenant_and_a_key_that_works_once_and_can_be_revoked(
    client: AsyncTestClient, operator: Headers
) -> None:
    name = f"acme-{secrets.token_hex(3)}"
    made = await client.post("/v1/tenants", json={"name": name, "max_sandboxes": 3}, headers=operator)
    assert made.status_code == 201, made.text
    tenant = made.json()
    assert tenant["name"] == name and tenant["max_sandboxes"] == 3 and tenant["id"].startswith("ten_")
    listed = (await client.get("/v1/tenants", headers=operator)).json()
    assert name in {t["name"] for t in listed}
    assert (await client.get(f"/v1/tenants/{name}", headers=operator)).json()["id"] == tenant["id"]
    again = await client.post("/v1/tenants", json={"name": name}, headers=operator)
    assert again.status_code == 409

    key = await client.post("/v1/keys", json={"tenant": tenant["id"], "name": "ci"}, headers=operator)
    assert key.status_code == 201, key.text
    secret, out = key.json()["secret"], key.json()["key"]
    assert secret.startswith(f"sl_{out['prefix']}_") and out["tenant_id"] == tenant["id"]
    assert sorted(out["scopes"]) == ["sandboxes:read", "sandboxes:write"] and out["revoked_at"] is None
    assert "digest" not in out and secret not in str((await client.get("/v1/keys", headers=operator)).json())

    mine = _bearer(secret)
    assert (await client.get("/v1/sandboxes", headers=mine)).status_code == 200
    assert (await client.delete(f"/v1/keys/{out['id']}", headers=operator)).status_code == 204
    refused = await client.get("/v1/sandboxes", headers=mine)
    assert refused.status_code == 401 and refused.json()["code"] == "not_authenticated"
    revoked = [k for k in (await client.get("/v1/keys", params={"tenant": name}, headers=operator)).json()]
    assert [k["revoked_at"] is not None for k in revoked] == [True]


async def test_a_tenant_key_manages_only_its_own_keys(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    alice_keys = (await client.get("/v1/keys", headers=alice)).json()
    assert len(alice_keys) == 1
    alice_tenant = alice_keys[0]["tenant_id"]
    bob_keys = (await client.get("/v1/keys", headers=bob)).json()
    bob_key, bob_tenant = bob_keys[0]["id"], bob_keys[0]["tenant_id"]

    # her own: create, list, revoke
    made = await client.post("/v1/keys", json={"name": "second"}, headers=alice)
    assert made.status_code == 201, made.text
    assert made.json()["key"]["tenant_id"] == alice_tenant
    assert len((await client.get("/v1/keys", headers=alice)).json()) == 2
    assert (await client.delete(f"/v1/keys/{made.json()['key']['id']}", headers=alice)).status_code == 204

    # nothing of bob's: his keys are not listed, cannot be revoked, his tenant cannot be named
    assert bob_key not in {k["id"] for k in (await client.get("/v1/keys", headers=alice)).json()}
    assert (await client.delete(f"/v1/keys/{bob_key}", headers=alice)).status_code == 404
    assert (await client.get("/v1/keys", params={"tenant": bob_tenant}, headers=alice)).status_code == 404
    foreign = await client.post("/v1/keys", json={"tenant": bob_tenant}, headers=alice)
    assert foreign.status_code == 404
    assert (await client.get(f"/v1/tenants/{bob_tenant}", headers=alice)).status_code == 404
    assert [t["id"] for t in (await client.get("/v1/tenants", headers=alice)).json()] == [alice_tenant]
    # bob's key still works
    assert (await client.get("/v1/sandboxes", headers=bob)).status_code == 200

    # tenants are created by operators only
    refused = await client.post("/v1/tenants", json={"name": f"x-{secrets.token_hex(3)}"}, headers=alice)
    assert refused.status_code == 403 and refused.json()["code"] == "not_permitted"


async def test_a_key_never_grants_more_than_it_holds(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    reader = await new_tenant(scopes=["sandboxes:read"])
    for scopes in (["operator"], ["sandboxes:write"], ["sandboxes:read", "sandboxes:write"]):
        resp = await client.post("/v1/keys", json={"scopes": scopes}, headers=reader)
        assert resp.status_code == 403, (scopes, resp.text)
    writer = await new_tenant()
    assert (await client.post("/v1/keys", json={"scopes": ["operator"]}, headers=writer)).status_code == 403
    # by default a new key has the scopes of the key that made it
    made = await client.post("/v1/keys", json={}, headers=reader)
    assert made.status_code == 201 and made.json()["key"]["scopes"] == ["sandboxes:read"]


async def test_hostile_tenant_and_key_input_is_a_clear_4xx(
    client: AsyncTestClient, operator: Headers
) -> None:
    for body in (
        {"name": ""},
        {"name": "a" * 101},
        {"name": "bad\nname"},
        {"name": "nul\x00"},
        {"name": "../etc"},
        {"name": "ok", "max_sandboxes": -1},
        {"name": "ok", "max_cpus": 1e300},
        {"name": "ok", "surprise": 1},
    ):
        resp = await client.post("/v1/tenants", json=body, headers=operator)
        assert resp.status_code in (400, 422), (body, resp.text)
    for body in (
        {"scopes": ["root"]},
        {"name": "x" * 101},
        {"tenant": "nobody-here"},
        {"scopes": "operator"},
    ):
        resp = await client.post("/v1/keys", json=body, headers=operator)
        assert resp.status_code in (400, 404, 422), (body, resp.text)
    assert (await client.delete("/v1/keys/key_missing", headers=operator)).status_code == 404
    assert (await client.get("/v1/tenants/nobody-here", headers=operator)).status_code == 404
