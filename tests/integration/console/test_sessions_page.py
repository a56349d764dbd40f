"""The console's sessions: a tenant sees only its own; a session's page lists its workspace,
uploads and downloads files there, and hands out a terminal token only with the CSRF token."""

from __future__ import annotations

import asyncio
import re
import secrets

from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.conftest import BUSYBOX
from tests.integration.conftest import NewTenant, key_of
from tests.support.console import page_token, sign_in


async def test_a_sessions_page_its_files_and_its_terminal_token(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    sessions = {}
    for who, h in (("alice", alice), ("bob", bob)):
        env = f"{who}-{secrets.token_hex(3)}"
        body = {"name": env, "images": [BUSYBOX], "pool_size": 0}
        assert (await client.post("/v1/environments", json=body, headers=h)).status_code == 201
        started = await client.post("/v1/sessions", json={"environment": env}, headers=h)
        sessions[who] = started.json()["id"]
    mine, theirs = sessions["alice"], sessions["bob"]
    try:
        await sign_in(browser, key_of(alice))
        listing = await browser.get("/console/sessions/")
        assert f"session-{mine}" in listing.text and theirs not in listing.text
        assert (await browser.get(f"/console/sessions/{theirs}")).status_code == 404
        page = await browser.get(f"/console/sessions/{mine}")
        assert page.status_code == 200 and 'data-testid="terminal"' in page.text
        csrf = {"x-csrftoken": page_token(page.text)}

        # terminal token: only with the CSRF header, only for one's own session
        assert (await browser.post(f"/console/sessions/{mine}/terminal")).status_code == 403
        assert (await browser.post(f"/console/sessions/{theirs}/terminal", headers=csrf)).status_code == 404
        term = await browser.post(f"/console/sessions/{mine}/terminal", headers=csrf)
        assert term.status_code == 200 and re.match(
            rf"^/v1/sessions/{mine}/pty\?token=slt_", term.json()["path"]
        )

        # files: upload, list, download; hostile names stay inside the workspace
        up = await browser.post(
            f"/console/sessions/{mine}/files",
            data={"path": "."},
            files={"file": ("hello.txt", b"hi from the console\n", "text/plain")},
            headers=csrf,
        )
        assert up.status_code == 200 and 'data-testid="file-hello.txt"' in up.text, up.text
        down = await browser.get(f"/console/sessions/{mine}/files/download", params={"path": "hello.txt"})
        assert down.content == b"hi from the console\n"
        # a name with CR, LF, a quote and a non-ASCII letter (any tenant can plant one): was a 500
        planted = await client.post(
            f"/v1/sessions/{mine}/features/shell/run",
            json={"command": "printf x > \"$(printf 'a\\r\\nb\\042\\303\\251.txt')\""},
            headers=alice,
        )
        assert planted.status_code == 200 and planted.json()["exit_code"] == 0, planted.text
        odd = await browser.get(
            f"/console/sessions/{mine}/files/download", params={"path": 'a\r\nb"\u00e9.txt'}
        )
        assert odd.status_code == 200 and odd.content == b"x", odd.text
        assert odd.headers["content-disposition"] == (
            "attachment; filename=\"a__b__.txt\"; filename*=UTF-8''a%0D%0Ab%22%C3%A9.txt"
        )
        for path in ("../../etc", "/etc"):
            listed = await browser.get(f"/console/sessions/{mine}/files", params={"path": path})
            assert listed.status_code == 200 and 'role="alert"' in listed.text, path
        sneaky = await browser.post(
            f"/console/sessions/{mine}/files",
            data={"path": "."},
            files={"file": ("../../escape.txt", b"x", "text/plain")},
            headers=csrf,
        )
        assert sneaky.status_code == 200 and 'data-testid="file-escape.txt"' in sneaky.text
        ran = await client.post(
            f"/v1/sessions/{mine}/features/shell/run", json={"command": "cat hello.txt; ls /"}, headers=alice
        )
        assert (
            ran.json()["stdout"].startswith("hi from the console\n")
            and "escape.txt" not in ran.json()["stdout"]
        )
        assert (await browser.get(f"/console/sessions/{theirs}/files")).status_code == 404

        # a background process: listed, its output readable; another tenant's is not found
        started = await client.post(
            f"/v1/sessions/{mine}/processes", json={"command": "echo out-from-process"}, headers=alice
        )
        pid = started.json()["id"]
        listed = await browser.get(f"/console/sessions/{mine}/processes")
        assert f"process-{pid}" in listed.text
        deadline = asyncio.get_running_loop().time() + 20
        while (
            "out-from-process"
            not in (out := await browser.get(f"/console/sessions/{mine}/processes/{pid}/output")).text
        ):
            assert asyncio.get_running_loop().time() < deadline, out.text
            await asyncio.sleep(0.3)
        assert (await browser.get(f"/console/sessions/{theirs}/processes/{pid}/output")).status_code == 404

        # a checkpoint: listed with its diff, its archive downloadable (only through its session)
        snap = (await client.post(f"/v1/sessions/{mine}/checkpoints", headers=alice)).json()
        page = await browser.get(f"/console/sessions/{mine}")
        assert f"checkpoint-{snap['id']}" in page.text and "hello.txt" in page.text
        tar = await browser.get(f"/console/sessions/{mine}/checkpoints/{snap['id']}/archive")
        assert tar.status_code == 200 and b"hi from the console" in tar.content
        other = await browser.get(f"/console/sessions/{theirs}/checkpoints/{snap['id']}/archive")
        assert other.status_code == 404

        # once the session ends, its processes fragment says so and stops its polling (286)
        assert (await client.delete(f"/v1/sessions/{mine}", headers=alice)).status_code == 204
        ended = await browser.get(f"/console/sessions/{mine}/processes")
        assert ended.status_code == 286 and "No processes to show" in ended.text, ended.text
    finally:
        for who, h in (("alice", alice), ("bob", bob)):
            await client.delete(f"/v1/sessions/{sessions[who]}", headers=h)


async def test_a_session_links_to_its_traces_when_a_viewer_is_configured(
    app_settings: Settings, client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    env = f"traces-{secrets.token_hex(3)}"
    assert (
        await client.post("/v1/environments", json={"name": env, "images": [BUSYBOX]}, headers=h)
    ).status_code == 201
    sid = (await client.post("/v1/sessions", json={"environment": env}, headers=h)).json()["id"]
    try:
        plain = create_app(app_settings)
        viewer = create_app(
            app_settings.model_copy(update={"console_trace_url": "http://jaeger/t?id={session_id}"})
        )
        for app, link in ((plain, None), (viewer, f"http://jaeger/t?id={sid}")):
            async with AsyncTestClient(app, timeout=60) as browser:
                await sign_in(browser, key_of(h))
                page = (await browser.get(f"/console/sessions/{sid}")).text
                if link is None:
                    assert "trace-link" not in page
                else:
                    assert f'href="{link}"' in page and 'rel="noopener noreferrer"' in page
    finally:
        await client.delete(f"/v1/sessions/{sid}", headers=h)
