"""Over every console route: a tenant's console shows none of another tenant's objects, and a
route aimed at another tenant's object (by id or name) is "not found" and changes nothing.
The routes are read from the app itself, so a new console route is covered (or this test fails
on a parameter it does not know)."""

from __future__ import annotations

import re
import secrets
from typing import Any

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant, key_of
from tests.support.console import page_token, sign_in

PUBLIC = {"/console/login", "/console/logout"}


async def _bobs_things(client: AsyncTestClient, bob: Headers) -> dict[str, str]:
    env = f"bob-{secrets.token_hex(3)}"
    body = {"name": env, "images": [BUSYBOX], "pool_size": 0}
    assert (await client.post("/v1/environments", json=body, headers=bob)).status_code == 201
    session = (await client.post("/v1/sessions", json={"environment": env}, headers=bob)).json()
    sandbox = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=bob)).json()
    snapshot = (await client.post(f"/v1/sessions/{session['id']}/checkpoints", headers=bob)).json()
    started = await client.post(
        f"/v1/sessions/{session['id']}/processes", json={"command": "echo bob"}, headers=bob
    )
    process = started.json()
    key = (await client.get("/v1/keys", headers=bob)).json()[0]
    return {
        "name": env,
        "session_id": session["id"],
        "sandbox_id": sandbox["id"],
        "key_id": key["id"],
        "key_prefix": key["prefix"],
        "tenant_id": key["tenant_id"],
        "session_sandbox": session["sandbox_id"],
        "snapshot_id": snapshot["id"],
        "process_id": process["id"],
    }


def _console_routes(app: Any) -> list[tuple[str, str]]:
    found = []
    for route in app.routes:
        if not route.path.startswith("/console") or "/static" in route.path or route.path in PUBLIC:
            continue
        for method in sorted(set(route.methods) - {"OPTIONS", "HEAD"}):
            found.append((method, route.path_format))
    return found


async def test_no_console_route_shows_or_touches_another_tenants_objects(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    theirs = await _bobs_things(client, bob)
    secrets_of_bob = [
        theirs[k] for k in ("name", "session_id", "sandbox_id", "key_id", "key_prefix", "tenant_id")
    ]
    try:
        await sign_in(browser, key_of(alice))
        token = page_token((await browser.get("/console/")).text)
        routes = _console_routes(browser.app)
        assert len(routes) >= 15, routes
        for method, template in routes:
            params = re.findall(r"\{(\w+)\}", template)
            unknown = set(params) - set(theirs)
            assert not unknown, f"{template}: teach this test the parameter(s) {unknown}"
            path = template
            for name in params:
                path = path.replace(f"{{{name}}}", theirs[name])
            query = {"path": "."} if path.endswith(("/files", "/download")) else {}
            headers = {"x-csrftoken": token, "HX-Request": "true"}
            if method == "GET":
                resp = await browser.get(path, params=query, headers=headers)
            else:
                resp = await browser.post(path, data={"ids": theirs["sandbox_id"]}, headers=headers)
            if params:
                assert resp.status_code == 404, (method, path, resp.status_code, resp.text[:300])
            else:
                assert resp.status_code < 500, (method, path, resp.text[:300])
            # an id the request itself named may be echoed in the "not found"; nothing else may show
            leaked = [s for s in secrets_of_bob if s in resp.text and s not in path]
            assert not leaked, (method, path, leaked)

        # nothing of bob's changed
        assert (await client.get(f"/v1/sandboxes/{theirs['sandbox_id']}", headers=bob)).json()[
            "status"
        ] == "ready"
        assert (await client.get(f"/v1/sessions/{theirs['session_id']}", headers=bob)).json()[
            "status"
        ] == "active"
        assert (await client.get(f"/v1/environments/{theirs['name']}", headers=bob)).status_code == 200
        assert (await client.get("/v1/sandboxes", headers=bob)).status_code == 200  # his key still works
    finally:
        await client.delete(f"/v1/sessions/{theirs['session_id']}", headers=bob)
        await client.delete(f"/v1/sandboxes/{theirs['sandbox_id']}", headers=bob)
