"""The console's environments page: create with a warm pool, change the pool, delete (the pool
drains); a tenant sees only its own; bad input is a message on the page, never a 500."""

from __future__ import annotations

import secrets

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant, key_of
from tests.support.console import csrf, sign_in


async def test_create_change_and_delete_an_environment_from_the_console(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    theirs = f"bob-{secrets.token_hex(3)}"
    body = {"name": theirs, "images": [BUSYBOX]}
    assert (await client.post("/v1/environments", json=body, headers=bob)).status_code == 201
    await sign_in(browser, key_of(alice))
    page = await browser.get("/console/environments/")
    assert page.status_code == 200 and theirs not in page.text and "No environments yet" in page.text

    name = f"console-env-{secrets.token_hex(3)}"
    form = {
        "name": name,
        "images": BUSYBOX,
        "pool_min": "1",
        "pool_max": "1",
        "_csrf_token": csrf(page.text),
    }
    made = await browser.post("/console/environments/", data=form)
    assert made.status_code == 200 and f"env-{name}" in made.text, made.text[-1500:]
    env = (await client.get(f"/v1/environments/{name}", headers=alice)).json()
    assert env["pool_size"] == [1, 1] and env["images"] == [BUSYBOX]

    changed = await browser.post(
        f"/console/environments/{name}",
        data={"pool_min": "0", "pool_max": "2", "_csrf_token": csrf(made.text)},
    )
    assert changed.status_code == 200
    assert (await client.get(f"/v1/environments/{name}", headers=alice)).json()["pool_size"] == [0, 2]
    # limits and images change alone; the pool stays as it is
    limits = await browser.post(
        f"/console/environments/{name}",
        data={
            "memory_mb": "256",
            "cpus": "0.5",
            "images": f"{BUSYBOX}, sandlot/python:3",
            "_csrf_token": csrf(made.text),
        },
    )
    assert limits.status_code == 200
    env = (await client.get(f"/v1/environments/{name}", headers=alice)).json()
    assert env["memory_mb"] == 256 and env["cpus"] == 0.5 and env["pool_size"] == [0, 2]
    assert env["images"] == [BUSYBOX, "sandlot/python:3"]
    # features as JSON: set, refused when not an object or not JSON, or naming no feature
    token = csrf(made.text)
    ok = await browser.post(
        f"/console/environments/{name}", data={"features": '{"shell": null}', "_csrf_token": token}
    )
    assert ok.status_code == 200 and f'data-testid="features-{name}"><code>shell</code>' in ok.text
    assert (await client.get(f"/v1/environments/{name}", headers=alice)).json()["features"] == {"shell": None}
    for bad in ("[1]", "{nope", '{"no-such-feature": null}', '"x"'):
        resp = await browser.post(
            f"/console/environments/{name}", data={"features": bad, "_csrf_token": token}
        )
        assert resp.status_code == 200 and 'role="alert"' in resp.text, bad

    for bad in (
        {"name": "bad name", "images": BUSYBOX},
        {"name": "ok-name", "images": ""},
        {"name": "ok-name", "images": BUSYBOX, "pool_min": "x"},
        {"name": "ok-name", "images": BUSYBOX, "memory_mb": "1"},
        {"name": name, "images": BUSYBOX},  # exists
    ):
        resp = await browser.post("/console/environments/", data={**bad, "_csrf_token": csrf(made.text)})
        assert resp.status_code == 200 and 'role="alert"' in resp.text, bad
    # another tenant's environment: not found, untouched
    foreign = await browser.post(
        f"/console/environments/{theirs}/delete", data={"_csrf_token": csrf(made.text)}
    )
    assert foreign.status_code == 404
    assert (await client.get(f"/v1/environments/{theirs}", headers=bob)).status_code == 200

    gone = await browser.post(f"/console/environments/{name}/delete", data={"_csrf_token": csrf(made.text)})
    assert gone.status_code == 200 and f"env-{name}" not in gone.text
    assert (await client.get(f"/v1/environments/{name}", headers=alice)).status_code == 404


async def test_an_operators_forms_on_two_tenants_shared_name_change_only_their_own_row(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    """Two tenants each have an environment named alike; an operator's "Set" and "Delete" on
    one row reach that row's environment (the forms post by id; by name they changed the
    other tenant's, or now would be refused as ambiguous)."""
    b, c = await new_tenant(), await new_tenant()
    name = f"shared-{secrets.token_hex(3)}"
    envs = []
    for tenant in (b, c):
        made = await client.post("/v1/environments", json={"name": name, "images": [BUSYBOX]}, headers=tenant)
        assert made.status_code == 201, made.text
        envs.append(made.json())
    await sign_in(browser, key_of(operator))
    page = await browser.get("/console/environments/")
    for env in envs:
        assert f'action="/console/environments/{env["id"]}"' in page.text
        assert f'action="/console/environments/{env["id"]}/delete"' in page.text
    set_c = await browser.post(
        f"/console/environments/{envs[1]['id']}", data={"pids": "55", "_csrf_token": csrf(page.text)}
    )
    assert set_c.status_code == 200 and 'role="alert"' not in set_c.text, set_c.text[-1500:]
    assert (await client.get(f"/v1/environments/{name}", headers=c)).json()["pids"] == 55
    assert (await client.get(f"/v1/environments/{name}", headers=b)).json()["pids"] != 55
    token = {"_csrf_token": csrf(page.text)}
    gone = await browser.post(f"/console/environments/{envs[0]['id']}/delete", data=token)
    assert gone.status_code == 200
    assert (await client.get(f"/v1/environments/{name}", headers=b)).status_code == 404
    assert (await client.get(f"/v1/environments/{name}", headers=c)).status_code == 200
