"""Hostile inputs and tenant isolation through the HTTP API."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from litestar.testing import AsyncTestClient

from sandlot.services.accounts import AccountService
from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant


@pytest.fixture
async def owned(client: AsyncTestClient, new_tenant: NewTenant) -> AsyncIterator[tuple[Headers, str]]:
    h = await new_tenant()
    resp = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h)
    assert resp.status_code == 201, resp.text
    sid = resp.json()["id"]
    yield h, sid
    await client.delete(f"/v1/sandboxes/{sid}", headers=h)


def _problem(resp, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["code"] == code and body["status"] == status and body["detail"]
    assert "Traceback" not in resp.text
    return body


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Bearer",
        "Basic dXNlcjpwdw==",
        "Bearer sl_00000000_notarealkey",
        "Bearer garbage",
    ],
)
async def test_missing_or_wrong_keys_get_401(client: AsyncTestClient, header: str | None) -> None:
    headers = {"Authorization": header} if header else {}
    _problem(await client.get("/v1/sandboxes", headers=headers), 401, "not_authenticated")


async def test_a_revoked_key_gets_401(
    client: AsyncTestClient, accounts: AccountService, app_settings
) -> None:
    """Revoked elsewhere (another process's service), the key stops working within the
    documented ``auth_cache_seconds``."""
    tenant = await accounts.create_tenant("revoked-tenant")
    key = await accounts.create_key(tenant.id)
    h = {"Authorization": f"Bearer {key.plaintext}"}
    assert (await client.get("/v1/sandboxes", headers=h)).status_code == 200
    await accounts.revoke_key(key.key.id)
    deadline = time.monotonic() + app_settings.auth_cache_seconds + 1
    resp = await client.get("/v1/sandboxes", headers=h)
    while resp.status_code == 200 and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        resp = await client.get("/v1/sandboxes", headers=h)
    body = _problem(resp, 401, "not_authenticated")
    assert "revoked" in body["detail"]


async def test_another_tenants_sandbox_is_404_everywhere(
    client: AsyncTestClient, owned: tuple[Headers, str], new_tenant: NewTenant
) -> None:
    _, sid = owned
    intruder = await new_tenant()
    for method, url, kwargs in [
        ("GET", f"/v1/sandboxes/{sid}", {}),
        ("GET", f"/v1/sandboxes/{sid}/events", {}),
        ("DELETE", f"/v1/sandboxes/{sid}", {}),
        ("POST", f"/v1/sandboxes/{sid}/exec", {"json": {"command": "id"}}),
        ("GET", f"/v1/sandboxes/{sid}/files", {"params": {"path": "x"}}),
        ("PUT", f"/v1/sandboxes/{sid}/files", {"params": {"path": "x"}, "content": b"x"}),
    ]:
        resp = await client.request(method, url, headers=intruder, **kwargs)
        _problem(resp, 404, "not_found")
    listed = (await client.get("/v1/sandboxes", headers=intruder)).json()
    assert sid not in {s["id"] for s in listed}


async def test_an_unknown_id_looks_the_same_as_another_tenants(
    client: AsyncTestClient, owned: tuple[Headers, str], new_tenant: NewTenant
) -> None:
    _, sid = owned
    intruder = await new_tenant()
    theirs = (await client.get(f"/v1/sandboxes/{sid}", headers=intruder)).json()
    missing = (await client.get("/v1/sandboxes/sbx_0000000000000000", headers=intruder)).json()
    assert theirs["code"] == missing["code"] == "not_found"
    assert set(theirs) == set(missing)


async def test_operators_see_every_tenant(
    client: AsyncTestClient, owned: tuple[Headers, str], operator: Headers
) -> None:
    _, sid = owned
    assert (await client.get(f"/v1/sandboxes/{sid}", headers=operator)).status_code == 200
    listed = (await client.get("/v1/sandboxes", headers=operator, params={"limit": 1000})).json()
    assert sid in {s["id"] for s in listed}


@pytest.mark.parametrize(
    "path", ["../etc/passwd", "/etc/passwd", "a/../../etc/shadow", "/workspace/../root/x"]
)
async def test_paths_outside_the_workspace_are_refused(
    client: AsyncTestClient, owned: tuple[Headers, str], path: str
) -> None:
    h, sid = owned
    url = f"/v1/sandboxes/{sid}/files"
    _problem(await client.get(url, params={"path": path}, headers=h), 422, "path_outside_workspace")
    resp = await client.put(url, params={"path": path}, content=b"pwned", headers=h)
    _problem(resp, 422, "path_outside_workspace")


async def test_symlinks_out_of_the_workspace_neither_read_nor_write(
    client: AsyncTestClient, owned: tuple[Headers, str]
) -> None:
    h, sid = owned
    setup = await client.post(
        f"/v1/sandboxes/{sid}/exec",
        json={"command": "ln -s /tmp tmpdir; ln -s /etc/passwd pw"},
        headers=h,
    )
    assert setup.json()["exit_code"] == 0
    url = f"/v1/sandboxes/{sid}/files"
    _problem(await client.get(url, params={"path": "pw"}, headers=h), 422, "path_outside_workspace")
    resp = await client.put(url, params={"path": "tmpdir/planted"}, content=b"x", headers=h)
    _problem(resp, 422, "path_outside_workspace")
    check = await client.post(f"/v1/sandboxes/{sid}/exec", json={"command": "ls /tmp/planted"}, headers=h)
    assert check.json()["exit_code"] != 0


async def test_bodies_over_the_limit_get_413(
    client: AsyncTestClient, owned: tuple[Headers, str], app_settings
) -> None:
    h, sid = owned
    big_file = b"x" * (app_settings.max_file_bytes + 1)
    resp = await client.put(f"/v1/sandboxes/{sid}/files", params={"path": "f"}, content=big_file, headers=h)
    _problem(resp, 413, "payload_too_large")
    big_json = {"command": "echo " + "x" * app_settings.max_request_bytes}
    _problem(
        await client.post(f"/v1/sandboxes/{sid}/exec", json=big_json, headers=h),
        413,
        "payload_too_large",
    )


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"image": 5}, "image"),
        ({"memory_mb": 1}, "memory_mb"),
        ({"cpus": 0.0001}, "cpus"),  # was a 503 with the host's cgroup path in it
        ({"cpus": "nan"}, "cpus"),  # a guard: quota checks are comparisons, false for NaN
        ({"unknown_field": True}, "unknown_field"),
        ({"env": {"BAD NAME": "x"}}, None),
    ],
)
async def test_invalid_create_bodies_get_422_naming_the_field(
    client: AsyncTestClient, new_tenant: NewTenant, body: dict, field: str | None
) -> None:
    h = await new_tenant()
    resp = await client.post("/v1/sandboxes", json=body, headers=h)
    assert resp.status_code == 422, resp.text
    if field:
        assert field in resp.text


async def test_an_environment_of_a_ten_thousandth_of_a_cpu_is_422(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    body = {"name": "tiny", "images": [BUSYBOX], "cpus": 0.0001}
    resp = await client.post("/v1/environments", json=body, headers=h)
    assert resp.status_code == 422 and "cpus" in resp.text, resp.text
    made = await client.post("/v1/environments", json={**body, "cpus": 0.5}, headers=h)
    assert made.status_code == 201, made.text
    changed = await client.patch("/v1/environments/tiny", json={"cpus": 0.001}, headers=h)
    assert changed.status_code == 422 and "cpus" in changed.text, changed.text


async def test_malformed_json_is_a_4xx_problem(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = {**(await new_tenant()), "content-type": "application/json"}
    resp = await client.post("/v1/sandboxes", content=b"{not json", headers=h)
    assert 400 <= resp.status_code < 500
    assert resp.json()["code"]


async def test_unknown_image_is_422_with_a_code(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    resp = await client.post("/v1/sandboxes", json={"image": "sandlot/nope:0"}, headers=h)
    _problem(resp, 422, "image_not_found")
    listed = (await client.get("/v1/sandboxes", headers=h)).json()
    assert listed == []


async def test_quota_is_enforced_with_429(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant(max_sandboxes=1)
    first = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h)
    assert first.status_code == 201
    _problem(await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h), 429, "quota_exceeded")
    await client.delete(f"/v1/sandboxes/{first.json()['id']}", headers=h)
    again = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h)
    assert again.status_code == 201
    await client.delete(f"/v1/sandboxes/{again.json()['id']}", headers=h)


async def test_read_only_keys_cannot_write(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant(scopes=["sandboxes:read"])
    assert (await client.get("/v1/sandboxes", headers=h)).status_code == 200
    resp = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h)
    _problem(resp, 403, "not_permitted")


async def test_network_needs_the_tenant_to_allow_it(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    resp = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "network": True}, headers=h)
    _problem(resp, 403, "not_permitted")
