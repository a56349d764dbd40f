"""The console's tenants and keys page: an operator creates a tenant and a key (its secret
shown once, and it works); a tenant key sees only its own keys, cannot create tenants or grant
more than it has, and revoking through the page ends the key."""

from __future__ import annotations

import re
import secrets

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant, key_of
from tests.support.console import csrf, sign_in


async def test_an_operator_makes_a_tenant_and_a_key_that_works(
    browser: AsyncTestClient, client: AsyncTestClient, operator: Headers
) -> None:
    await sign_in(browser, key_of(operator))
    page = await browser.get("/console/keys")
    assert page.status_code == 200 and "New tenant" in page.text
    name = f"console-{secrets.token_hex(3)}"
    made = await browser.post(
        "/console/tenants", data={"name": name, "max_sandboxes": "4", "_csrf_token": csrf(page.text)}
    )
    assert made.status_code == 200 and f"tenant-{name}" in made.text
    assert f'data-testid="usage-{name}">0<' in made.text  # nothing running yet
    bad = await browser.post("/console/tenants", data={"name": "bad name\n", "_csrf_token": csrf(made.text)})
    assert bad.status_code == 200 and 'role="alert"' in bad.text
    tenant_id = re.search(rf'data-testid="tenant-{name}"><td>{name}</td><td><code>([^<]+)<', made.text)
    assert tenant_id, made.text[-2000:]
    key = await browser.post(
        "/console/keys",
        data={
            "tenant": tenant_id.group(1),
            "name": "ci",
            "scopes": ["sandboxes:read", "sandboxes:write"],
            "_csrf_token": csrf(made.text),
        },
    )
    secret = re.search(r'data-testid="new-secret">(sl_[^<]+)<', key.text)
    assert key.status_code == 200 and secret, key.text[:2000]
    assert (
        await client.get("/v1/sandboxes", headers={"Authorization": f"Bearer {secret.group(1)}"})
    ).status_code == 200
    theirs = {"Authorization": f"Bearer {secret.group(1)}"}
    box = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=theirs)).json()["id"]
    try:
        again = await browser.get("/console/keys")
        assert secret.group(1) not in again.text  # shown once
        assert f'data-testid="usage-{name}">1<' in again.text  # its one sandbox
    finally:
        await client.delete(f"/v1/sandboxes/{box}", headers=theirs)


async def test_an_operator_changes_a_tenants_quotas_and_a_tenant_cannot(
    browser: AsyncTestClient, client: AsyncTestClient, operator: Headers, new_tenant: NewTenant
) -> None:
    alice = await new_tenant(max_sessions=5)
    tenant = (await client.get("/v1/tenants", headers=alice)).json()[0]
    await sign_in(browser, key_of(operator))
    page = await browser.get("/console/keys")
    assert f'action="/console/tenants/{tenant["id"]}"' in page.text
    assert f'data-testid="sessions-{tenant["name"]}">0/5<' in page.text
    saved = await browser.post(
        f"/console/tenants/{tenant['id']}",
        data={"max_sessions": "7", "max_ttl_seconds": "900", "_csrf_token": csrf(page.text)},
    )
    assert saved.status_code == 200 and f'data-testid="sessions-{tenant["name"]}">0/7<' in saved.text
    now = (await client.get(f"/v1/tenants/{tenant['id']}", headers=alice)).json()
    assert (now["max_sessions"], now["max_ttl_seconds"], now["max_sandboxes"]) == (7, 900, 20)
    wrong = await browser.post(
        f"/console/tenants/{tenant['id']}", data={"max_cpus": "-2", "_csrf_token": csrf(saved.text)}
    )
    assert wrong.status_code == 200 and 'role="alert"' in wrong.text and "max_cpus" in wrong.text
    # the tenant's own console has no quota form, and posting one is refused
    await sign_in(browser, key_of(alice))
    own = await browser.get("/console/keys")
    assert "quota-form" not in own.text
    refused = await browser.post(
        f"/console/tenants/{tenant['id']}", data={"max_sessions": "99", "_csrf_token": csrf(own.text)}
    )
    assert refused.status_code == 403 or 'role="alert"' in refused.text
    assert (await client.get(f"/v1/tenants/{tenant['id']}", headers=alice)).json()["max_sessions"] == 7


async def test_a_tenant_key_sees_its_own_keys_and_revokes_them(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(scopes=["sandboxes:read"]), await new_tenant()
    await sign_in(browser, key_of(alice))
    page = await browser.get("/console/keys")
    assert "New tenant" not in page.text
    assert key_of(alice).split("_")[1] in page.text and key_of(bob).split("_")[1] not in page.text
    refused = await browser.post("/console/tenants", data={"name": "nope", "_csrf_token": csrf(page.text)})
    assert refused.status_code == 200 and 'role="alert"' in refused.text
    escalate = await browser.post(
        "/console/keys", data={"scopes": ["sandboxes:write"], "_csrf_token": csrf(page.text)}
    )
    assert 'role="alert"' in escalate.text and "new-secret" not in escalate.text
    made = await browser.post("/console/keys", data={"name": "temp", "_csrf_token": csrf(page.text)})
    secret = re.search(r'data-testid="new-secret">(sl_[^<]+)<', made.text)
    assert secret
    # through the console's own app: a revocation is at once there (other processes: within
    # auth_cache_seconds)
    keys = (await browser.get("/v1/keys", headers={"Authorization": f"Bearer {secret.group(1)}"})).json()
    new_id = next(k["id"] for k in keys if k["name"] == "temp")
    bob_key = (await client.get("/v1/keys", headers=bob)).json()[0]["id"]
    assert (
        await browser.post(f"/console/keys/{bob_key}/revoke", data={"_csrf_token": csrf(made.text)})
    ).status_code == 404
    revoked = await browser.post(f"/console/keys/{new_id}/revoke", data={"_csrf_token": csrf(made.text)})
    assert revoked.status_code == 200  # followed back to the page
    assert (
        await client.get("/v1/sandboxes", headers={"Authorization": f"Bearer {secret.group(1)}"})
    ).status_code == 401
    assert (await client.get("/v1/sandboxes", headers=bob)).status_code == 200
