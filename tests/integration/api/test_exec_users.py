"""Commands as another user of the sandbox, through the API on real Docker: allowed only when
the service and the sandbox's environment both list the user; that user keeps no capability;
a sandbox used so never serves another session; one tenant's lists are its own."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.integration.conftest import Api, NewTenant

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(240)]

ROOT_PROBE = "id -u; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /etc/sandlot-was-here"


@pytest.fixture(scope="module")
async def allowing(
    app_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AsyncTestClient]:
    """An API process of the same deployment whose service allows root and nobody."""
    settings = app_settings.model_copy(
        update={
            "exec_users_allowed": ["root", "nobody"],
            "data_dir": tmp_path_factory.mktemp("users"),
            "reconcile_on_start": False,
        }
    )
    async with AsyncTestClient(create_app(settings), timeout=120) as client:
        yield client


async def _tenant(client: AsyncTestClient, new_tenant: NewTenant) -> Api:
    return Api(client, await new_tenant())


async def _exec(api: Api, session_id: str, command: str, **args: object) -> dict:
    resp = await api.call(session_id, "shell", "exec", argv=["sh", "-c", command], **args)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _problem(resp: object, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text  # type: ignore[attr-defined]
    body = resp.json()  # type: ignore[attr-defined]
    assert body["code"] == code, body
    return body


async def test_an_environment_lists_only_users_the_service_allows(
    allowing: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    name = f"u-{secrets.token_hex(3)}"
    base = {"images": ["sandlot/busybox:latest"]}
    resp = await allowing.post(
        "/v1/environments", json={"name": name, **base, "exec_users": ["daemon"]}, headers=h
    )
    assert "exec_users_allowed" in _problem(resp, 422, "invalid_input")["detail"]
    resp = await allowing.post(
        "/v1/environments", json={"name": name, **base, "exec_users": ["ro ot"]}, headers=h
    )
    _problem(resp, 422, "validation_error")
    resp = await allowing.post(
        "/v1/environments", json={"name": name, **base, "exec_users": ["root"]}, headers=h
    )
    assert resp.status_code == 201 and resp.json()["exec_users"] == ["root"]
    # a service that allows no one (the default) takes no environment that lists someone
    resp = await client.patch(f"/v1/environments/{name}", json={"exec_users": ["root"]}, headers=h)
    _problem(resp, 422, "invalid_input")
    resp = await client.patch(f"/v1/environments/{name}", json={"exec_users": []}, headers=h)
    assert resp.status_code == 200 and resp.json()["exec_users"] == []


async def test_root_writes_where_the_sandbox_user_cannot_and_its_sandbox_is_never_reused(
    allowing: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = await _tenant(allowing, new_tenant)
    env = await api.env(pool_size=[1, 1], exec_users=["root"])
    first = await api.session(env["name"])
    own = await _exec(api, first["id"], ROOT_PROBE)
    assert own["exit_code"] != 0 and "Permission denied" in own["stderr"]
    root = await _exec(api, first["id"], ROOT_PROBE, user="root")
    assert root["exit_code"] == 0, root
    assert root["stdout"] == "0\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n"  # no capability at all
    box = (await allowing.get(f"/v1/sandboxes/{first['sandbox_id']}", headers=api.h)).json()
    assert box["reusable"] is False
    await api.end(first["id"])
    box = (await allowing.get(f"/v1/sandboxes/{first['sandbox_id']}", headers=api.h)).json()
    assert box["status"] == "offline" and "another user" in box["status_reason"]
    second = await api.session(env["name"])
    assert second["sandbox_id"] != first["sandbox_id"]
    assert (await _exec(api, second["id"], "ls /etc/sandlot-was-here"))["exit_code"] != 0
    await api.end(second["id"])


async def test_users_not_listed_are_refused_and_leave_the_sandbox_reusable(
    allowing: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = await _tenant(allowing, new_tenant)
    env = await api.env(pool_size=0, exec_users=["root"])
    s = await api.session(env["name"])
    for user in ("nobody", "daemon", "0"):  # the service allows nobody, the environment does not
        resp = await api.call(s["id"], "shell", "exec", argv=["id"], user=user)
        body = _problem(resp, 403, "not_permitted")
        assert repr(user) in body["detail"]
    for user in ("root;id", "0:0", "$(id)", "x" * 33):
        _problem(await api.call(s["id"], "shell", "exec", argv=["id"], user=user), 422, "invalid_input")
    resp = await api.call(s["id"], "shell", "run", command="id -u", user="root")
    assert "shell.exec" in _problem(resp, 422, "invalid_input")["detail"]
    box = (await allowing.get(f"/v1/sandboxes/{s['sandbox_id']}", headers=api.h)).json()
    assert box["reusable"] is True
    assert (await api.sh(s["id"], "id -u"))["stdout"] == "1000\n"
    await api.end(s["id"])


async def test_the_sandbox_exec_route_follows_the_sandboxs_environment(
    allowing: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = await _tenant(allowing, new_tenant)
    env = await api.env(pool_size=0, exec_users=["root"])
    s = await api.session(env["name"])
    url = f"/v1/sandboxes/{s['sandbox_id']}/exec"
    resp = await allowing.post(url, json={"command": ["id", "-u"], "user": "root"}, headers=api.h)
    assert resp.status_code == 200 and resp.json()["stdout"] == "0\n", resp.text
    # a sandbox made directly has no environment: its image's user only
    direct = await allowing.post("/v1/sandboxes", json={}, headers=api.h)
    assert direct.status_code == 201, direct.text
    durl = f"/v1/sandboxes/{direct.json()['id']}/exec"
    _problem(
        await allowing.post(durl, json={"command": "id", "user": "root"}, headers=api.h), 403, "not_permitted"
    )
    assert (await allowing.delete(f"/v1/sandboxes/{direct.json()['id']}", headers=api.h)).status_code == 204
    await api.end(s["id"])


async def test_another_tenants_lists_are_its_own(allowing: AsyncTestClient, new_tenant: NewTenant) -> None:
    a, b = await _tenant(allowing, new_tenant), await _tenant(allowing, new_tenant)
    name = f"same-{secrets.token_hex(3)}"
    env_a = await a.env(name=name, pool_size=0, exec_users=["root"])
    env_b = await b.env(name=name, pool_size=0)  # the same name, in its own namespace
    assert env_a["id"] != env_b["id"] and env_b["exec_users"] == []
    _problem(await allowing.get(f"/v1/environments/{env_a['id']}", headers=b.h), 404, "not_found")
    sa, sb = await a.session(name), await b.session(name)
    _problem(await b.call(sb["id"], "shell", "exec", argv=["id"], user="root"), 403, "not_permitted")
    # nor can it reach the other tenant's session or sandbox, whose environment allows root
    _problem(await b.call(sa["id"], "shell", "exec", argv=["id"], user="root"), 404, "not_found")
    url = f"/v1/sandboxes/{sa['sandbox_id']}/exec"
    _problem(await allowing.post(url, json={"command": "id", "user": "root"}, headers=b.h), 404, "not_found")
    assert (await _exec(a, sa["id"], "id -u", user="root"))["stdout"] == "0\n"
    for api, s in ((a, sa), (b, sb)):
        await api.end(s["id"])


async def test_the_default_service_allows_no_other_user(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    _problem(await api.call(s["id"], "shell", "exec", argv=["id"], user="root"), 403, "not_permitted")
    await api.end(s["id"])


async def test_root_commands_racing_the_sessions_end_never_leave_a_reusable_sandbox(
    allowing: AsyncTestClient, new_tenant: NewTenant
) -> None:
    api = await _tenant(allowing, new_tenant)
    env = await api.env(pool_size=[1, 1], exec_users=["root"])
    s = await api.session(env["name"])

    async def as_root() -> int:
        resp = await api.call(s["id"], "shell", "exec", argv=["touch", "/etc/raced"], user="root")
        return resp.status_code if resp.status_code != 200 else resp.json()["exit_code"] or 200

    async def end() -> int:
        return (await allowing.delete(f"/v1/sessions/{s['id']}", headers=api.h)).status_code

    outcomes = await asyncio.gather(*(as_root() for _ in range(8)), end(), *(as_root() for _ in range(8)))
    ran = [o for o in outcomes[:8] + outcomes[9:] if o == 200]
    assert outcomes[8] == 204 and set(outcomes) <= {200, 204, 409, 502}, outcomes
    box = (await allowing.get(f"/v1/sandboxes/{s['sandbox_id']}", headers=api.h)).json()
    if ran:  # a root command ran: the sandbox must never serve another session
        assert box["reusable"] is False and box["status"] in ("shutting_down", "offline"), box
    again = await api.session(env["name"])
    assert (await _exec(api, again["id"], "ls /etc/raced"))["exit_code"] != 0
    await api.end(again["id"])
