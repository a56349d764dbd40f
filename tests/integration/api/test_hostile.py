"""What a hostile tenant tried, over HTTP, against real Docker and PostgreSQL (issue #11's
findings, one regression test or more for each)."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import secrets
import tarfile

import httpx
import pytest
import websockets
from litestar.testing import AsyncTestClient

from sandlot.runtime.base import LABEL_SANDBOX, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.tables import Sandbox
from tests.conftest import BUSYBOX, PYTHON
from tests.integration.conftest import Api, Headers, NewTenant
from tests.support.ws import read_until, ws

EVIL = r"(\S|\S|\S)*Z"


def tar_of(*members: tuple[str, int, bytes | str]) -> bytes:
    """(name, tarfile type, content or link target) as a tar."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, kind, payload in members:
            info = tarfile.TarInfo(name)
            info.type = bytes([kind]) if isinstance(kind, int) else kind
            if isinstance(payload, bytes):
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            else:
                info.linkname = payload
                tar.addfile(info)
    return out.getvalue()


REG, SYM, FIFO, CHR = ord(tarfile.REGTYPE), ord(tarfile.SYMTYPE), ord(tarfile.FIFOTYPE), ord(tarfile.CHRTYPE)


async def sandbox(client: AsyncTestClient, h: Headers, **fields: object) -> str:
    resp = await client.post("/v1/sandboxes", json={"image": BUSYBOX, **fields}, headers=h)
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def run(client: AsyncTestClient, h: Headers, sb: str, command: str | list[str]) -> dict:
    resp = await client.post(f"/v1/sandboxes/{sb}/exec", json={"command": command, "timeout": 60}, headers=h)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


# -- 1. root writes outside the workspace ---------------------------------------------------


async def test_a_newline_in_a_path_cannot_replace_etc_passwd(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    sb = await sandbox(client, h)
    await run(client, h, sb, "mkdir -p 'x\n/etc\nfile\n0\n0\n0' && ln -s /etc esc")
    before = (await run(client, h, sb, "cat /etc/passwd; stat -c %u:%a /etc/passwd"))["stdout"]
    for path in ("x\n/etc\nfile\n0\n0\n0/../../esc/passwd", "esc/passwd", "x\n/../esc/passwd"):
        resp = await client.put(
            f"/v1/sandboxes/{sb}/files", params={"path": path}, content=b"pwned", headers=h
        )
        assert resp.status_code == 422 and resp.json()["code"] == "path_outside_workspace", resp.text
    assert (await run(client, h, sb, "cat /etc/passwd; stat -c %u:%a /etc/passwd"))["stdout"] == before
    # a newline in a name is just a name (it was a 500)
    ok = await client.put(
        f"/v1/sandboxes/{sb}/files", params={"path": "x\n/in\nside"}, content=b"ok", headers=h
    )
    assert ok.status_code == 200, ok.text
    back = await client.get(f"/v1/sandboxes/{sb}/files", params={"path": "x\n/in\nside"}, headers=h)
    assert back.content == b"ok"


async def test_a_workspace_upload_cannot_follow_a_planted_link(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    await api.sh(sid, "ln -s /etc esc && mkdir -p deep/er && ln -s /tmp deep/er/out")
    for name in ("esc/passwd", "deep/er/out/x"):
        resp = await api.client.put(
            f"/v1/sessions/{sid}/workspace", content=tar_of((name, REG, b"pwned")), headers=api.h
        )
        assert resp.status_code == 422 and resp.json()["code"] == "path_outside_workspace", resp.text
    left = await api.sh(sid, "grep -c pwned /etc/passwd /tmp/x 2>/dev/null; true")
    assert "pwned" not in left["stdout"] and ":1" not in left["stdout"]
    await api.end(sid)


@pytest.mark.parametrize("kind", [FIFO, CHR])
async def test_device_nodes_and_fifos_in_an_upload_are_refused(api: Api, kind: int) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    body = tar_of(("fine.txt", REG, b"x"), ("node", kind, b""))
    resp = await api.client.put(f"/v1/sessions/{sid}/workspace", content=body, headers=api.h)
    assert resp.status_code == 422 and "only regular files" in resp.json()["detail"]
    assert (await api.sh(sid, "ls -A"))["stdout"] == ""  # nothing of it was unpacked
    await api.end(sid)


# -- 2. the reset between sessions ----------------------------------------------------------


async def test_the_next_session_on_a_pooled_sandbox_finds_nothing_of_the_last(api: Api) -> None:
    env = await api.env(pool_size=[1, 1])
    first = await api.session(env["name"])
    await api.sh(
        first["id"],
        "echo a > /tmp/a; echo b > /dev/shm/b; echo c > c; mkdir -p /tmp/ro && chmod 555 /tmp/ro; "
        "(sleep 4321 &); echo q > /var/tmp/q 2>/dev/null; true",
    )
    await api.end(first["id"])
    second = await api.session(env["name"])
    assert second["sandbox_id"] == first["sandbox_id"]  # the same container, reset
    seen = await api.sh(second["id"], "ls -A /tmp /dev/shm /var/tmp . 2>/dev/null; ps -o args")
    for trace in ("a\n", "b\n", "c\n", "ro\n", "q\n", "sleep 4321"):
        assert trace not in seen["stdout"], seen["stdout"]
    await api.end(second["id"])


# -- 3. memory: archives are checked while they stream ---------------------------------------


async def test_a_compressed_bomb_is_refused_while_it_unpacks(api: Api, client: AsyncTestClient) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = (1 << 30) + (1 << 20)  # just over the snapshot limit
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    bomb = gzip.compress(inner.getvalue(), compresslevel=9)
    del inner
    assert len(bomb) < 2 << 20
    resp = await client.put(f"/v1/sessions/{sid}/workspace", content=bomb, headers=api.h)
    assert resp.status_code == 413 and resp.json()["code"] == "payload_too_large"
    assert (await api.sh(sid, "ls -A"))["stdout"] == ""
    await api.end(sid)


# -- 4. regular expressions from tenants ------------------------------------------------------


async def test_a_pathological_pool_pattern_is_harmless_and_an_unsupported_one_refused(api: Api) -> None:
    env = await api.env(
        pool_size={EVIL: [0, 1], ".*": [0, 2]}, features={"shell": {"applicable_images": EVIL + "|.*"}}
    )
    sid = (await api.session(env["name"]))["id"]
    assert (await api.sh(sid, "echo fine"))["stdout"] == "fine\n"
    await api.end(sid)
    for body in ({"pool_size": {r"(a)\1": [0, 1]}}, {"features": {"shell": {"applicable_images": "(?=x)y"}}}):
        resp = await api.client.post(
            "/v1/environments",
            json={"name": f"bad-{secrets.token_hex(3)}", "images": [BUSYBOX], **body},
            headers=api.h,
        )
        assert resp.status_code == 422, resp.text


# -- 5. the disk limit ------------------------------------------------------------------------


async def test_a_full_disk_is_a_clear_error_and_the_sandbox_stays_usable(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    sb = await sandbox(client, h, disk_mb=64)
    for where in ("/workspace", "/tmp"):
        res = await run(client, h, sb, f"dd if=/dev/zero of={where}/fill bs=1M count=200 2>&1; echo rc=$?")
        assert "quota exceeded" in res["stdout"].lower() and "rc=1" in res["stdout"], res
        if where == "/tmp":
            await run(client, h, sb, "rm /tmp/fill")
    resp = await client.put(
        f"/v1/sandboxes/{sb}/files", params={"path": "more.bin"}, content=b"\0" * (4 << 20), headers=h
    )
    assert resp.status_code == 507 and resp.json()["code"] == "disk_full", resp.text
    await run(client, h, sb, "rm fill")
    assert (await run(client, h, sb, "echo ok > ok && cat ok"))["stdout"] == "ok\n"


# -- 6. state that only a restart repaired ----------------------------------------------------


async def test_deleting_a_sandbox_whose_create_was_interrupted_removes_its_container(
    client: AsyncTestClient,
    new_tenant: NewTenant,
    accounts: AccountService,
    pg_url: str,
    app_settings: Settings,
    docker_runtime: DockerRuntime,
) -> None:
    # the report: a SIGKILL during a create left a setting_up row; its container kept running
    # after the sandbox was deleted. Here: the row and the container as that crash left them
    # (the row never learnt the container's id).
    h = await new_tenant()
    me = await accounts.authenticate(h["Authorization"])
    engine = make_engine(pg_url)
    try:
        async with make_sessionmaker(engine).begin() as session:
            row = Sandbox(
                tenant_id=me.tenant_id,
                image=BUSYBOX,
                status="setting_up",
                runtime="docker",
                instance=app_settings.instance,
                memory_mb=64,
                cpus=0.5,
                pids=64,
            )
            session.add(row)
    finally:
        await engine.dispose()
    ref = await docker_runtime.create(
        SandboxSpec(row.id, me.tenant_id, BUSYBOX, labels={LABEL_SANDBOX: row.id})
    )
    assert await docker_runtime.is_running(ref)
    resp = await client.delete(f"/v1/sandboxes/{row.id}", headers=h)
    assert resp.status_code == 204
    assert not await docker_runtime.is_running(ref)
    assert (await client.get(f"/v1/sandboxes/{row.id}", headers=h)).json()["status"] == "offline"


# -- 7. leaks and oracles ---------------------------------------------------------------------


async def test_closed_terminals_leave_no_shell_behind(live_server: str, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    async with httpx.AsyncClient(base_url=live_server, headers=h, timeout=60) as http:
        name = f"pty-{secrets.token_hex(3)}"
        assert (
            await http.post("/v1/environments", json={"name": name, "images": [BUSYBOX]})
        ).status_code == 201
        sid = (await http.post("/v1/sessions", json={"environment": name})).json()["id"]

        async def shells() -> int:
            out = (
                await http.post(
                    f"/v1/sessions/{sid}/features/shell/exec", json={"argv": ["ps", "-o", "args"]}
                )
            ).json()
            return sum(1 for line in out["stdout"].splitlines() if line.strip() == "/bin/sh")

        before = await shells()
        for _ in range(5):
            async with websockets.connect(
                ws(live_server, f"/v1/sessions/{sid}/pty"), additional_headers=h
            ) as conn:
                await conn.send(b"echo opened\n")
                await read_until(conn, b"opened")
        for _ in range(50):
            if await shells() <= before:
                break
            await asyncio.sleep(0.2)
        assert await shells() <= before  # it was one more per terminal ever opened
        await http.delete(f"/v1/sessions/{sid}")


async def test_session_ids_are_each_tenants_own(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    # the report: POST /v1/sessions with another tenant's id answered 409 "exists"
    first, second = Api(client, await new_tenant()), Api(client, await new_tenant())
    chosen = f"run-{secrets.token_hex(3)}"
    a = await first.session((await first.env(pool_size=0))["name"], session_id=chosen)
    b = await second.session((await second.env(pool_size=0))["name"], session_id=chosen)
    assert a["id"] != b["id"] and a["client_ref"] == b["client_ref"] == chosen
    await first.sh(chosen, "echo mine > who")
    assert (await second.sh(chosen, "cat who 2>&1; true"))["stdout"] != "mine\n"
    again = await client.post(
        "/v1/sessions",
        json={"environment": (await first.env(pool_size=0))["name"], "session_id": chosen},
        headers=first.h,
    )
    assert again.status_code == 409
    for api, sid in ((first, chosen), (second, b["id"])):
        await api.end(sid)


# -- 8. inputs that gave 500 ------------------------------------------------------------------


async def test_inputs_that_were_500_are_4xx_naming_what_is_wrong(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    sb = await sandbox(client, h)
    bad_argv = await client.post(
        f"/v1/sandboxes/{sb}/exec", json={"command": ["echo", "a\u0000b"]}, headers=h
    )
    assert bad_argv.status_code == 422 and bad_argv.json()["field"] == "command"
    for path in ("/v1/sessions/ses%00x", "/v1/sandboxes/sbx%00"):
        resp = await client.get(path, headers=h)
        assert resp.status_code == 422 and "NUL" in resp.json()["detail"], resp.text
    resp = await client.get("/v1/sandboxes", params={"status": "ready\u0000"}, headers=h)
    assert resp.status_code == 422
    resp = await client.get("/v1/sandboxes", params={"offset": str(1 << 63)}, headers=h)
    assert resp.status_code in (400, 422)
    resp = await client.post(
        "/v1/sandboxes", content=b'{"image": "\xff\xfe"}', headers={**h, "Content-Type": "application/json"}
    )
    assert 400 <= resp.status_code < 500 and resp.headers["content-type"].startswith(
        "application/problem+json"
    )
    await run(client, h, sb, "echo s > secret && chmod 000 secret")
    resp = await client.get(f"/v1/sandboxes/{sb}/files", params={"path": "secret"}, headers=h)
    assert resp.status_code == 422 and "permission denied" in resp.json()["detail"]


async def test_python_output_that_breaks_the_value_line_is_still_a_result(api: Api) -> None:
    env = await api.env(images=[PYTHON])
    sid = (await api.session(env["name"]))["id"]
    code = "import atexit, sys\natexit.register(lambda: sys.stdout.write('after the value'))\n41 + 1"
    resp = await api.call(sid, "python", "run", code=code)
    assert resp.status_code == 200, resp.text
    assert resp.json()["value"] is None and "after the value" in resp.json()["stdout"]
    await api.end(sid)


# -- 9. semantics -----------------------------------------------------------------------------


async def test_file_writes_honour_permissions_and_keep_modes(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    await api.sh(sid, "echo keep > ro.txt && chmod 444 ro.txt && echo run > tool.sh && chmod 750 tool.sh")
    refused = await api.call(sid, "files", "write", path="ro.txt", content="overwritten")
    assert refused.status_code == 422 and "permission denied" in refused.json()["detail"]
    assert (await api.call(sid, "files", "write", path="tool.sh", content="echo new")).status_code == 200
    assert (await api.sh(sid, "cat ro.txt; stat -c %a ro.txt tool.sh"))["stdout"] == "keep\n444\n750\n"
    await api.end(sid)


async def test_a_relative_cwd_is_taken_from_the_workspace(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    await api.sh(sid, "mkdir -p sub/dir")
    resp = await api.call(sid, "shell", "exec", argv=["pwd"], cwd="sub/dir")
    assert resp.status_code == 200 and resp.json()["stdout"] == "/workspace/sub/dir\n", resp.text
    missing = await api.call(sid, "shell", "exec", argv=["pwd"], cwd="nope")
    assert missing.json()["exit_code"] == 126 and "nope" in missing.json()["stderr"]
    await api.end(sid)


async def test_the_shell_reports_an_out_of_memory_kill(api: Api) -> None:
    env = await api.env(images=[PYTHON], memory_mb=64)
    sid = (await api.session(env["name"]))["id"]
    res = await api.sh(sid, "python3 -c 'b = bytearray(300 * 1024 * 1024)'")
    assert res["exit_code"] == 137 and res["oom_killed"] is True
    assert (await api.sh(sid, "echo alive"))["oom_killed"] is False
    await api.end(sid)


async def test_terminal_frames_that_are_not_objects_get_error_frames(
    live_server: str, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    async with httpx.AsyncClient(base_url=live_server, headers=h, timeout=60) as http:
        name = f"pty-{secrets.token_hex(3)}"
        await http.post("/v1/environments", json={"name": name, "images": [BUSYBOX]})
        sid = (await http.post("/v1/sessions", json={"environment": name})).json()["id"]
        async with websockets.connect(
            ws(live_server, f"/v1/sessions/{sid}/pty"), additional_headers=h
        ) as conn:
            for frame in ("null", "[1, 2]", '"text"', "17", "not json"):
                await conn.send(frame)
                async with asyncio.timeout(10):
                    while True:
                        reply = await conn.recv()
                        if isinstance(reply, str) and json.loads(reply)["type"] == "error":
                            break
            await conn.send(b"echo still-here\n")
            await read_until(conn, b"still-here")
        await http.delete(f"/v1/sessions/{sid}")


# -- a second look (the review's findings) ----------------------------------------------------


async def test_a_planted_link_that_climbs_out_after_a_missing_directory_is_refused(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    # on disk: l -> x/../../tmp, where x does not exist yet; the archive makes x, then l/pwned
    await api.sh(sid, "ln -s x/../../tmp l")
    body = tar_of(("x", ord(tarfile.DIRTYPE), b""), ("l/pwned", REG, b"x"))
    resp = await api.client.put(f"/v1/sessions/{sid}/workspace", content=body, headers=api.h)
    assert resp.status_code == 422 and resp.json()["code"] == "path_outside_workspace", resp.text
    assert "pwned" not in (await api.sh(sid, "ls /tmp"))["stdout"]
    await api.end(sid)


async def test_odd_names_times_and_numbers_from_a_sandbox_are_never_a_500(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    await api.sh(sid, "printf x > \"$(printf 'bad\\377name')\"")
    made = await api.client.post(f"/v1/sessions/{sid}/checkpoints", headers=api.h)
    assert made.status_code == 201, made.text
    assert "bad\\xffname" in made.json()["diff"]["added"]
    assert (await api.client.get(f"/v1/sessions/{sid}/checkpoints", headers=api.h)).status_code == 200

    pax = io.BytesIO()
    with tarfile.open(fileobj=pax, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo("when")
        info.pax_headers = {"mtime": "inf"}
        tar.addfile(info)
    resp = await api.client.put(f"/v1/sessions/{sid}/workspace", content=pax.getvalue(), headers=api.h)
    assert resp.status_code in (200, 422), resp.text

    proc = (
        await api.client.post(f"/v1/sessions/{sid}/processes", json={"command": "true"}, headers=api.h)
    ).json()
    await asyncio.sleep(0.5)
    await api.sh(sid, f"echo 99999999999999999999999 > /tmp/.sandlot/proc/{proc['id']}/rc")
    got = await api.client.get(f"/v1/sessions/{sid}/processes/{proc['id']}", headers=api.h)
    assert got.status_code == 200, got.text

    await api.sh(sid, "mkdir -p bin && printf '#!/bin/sh\\necho nonsense\\n' > bin/sh && chmod +x bin/sh")
    await api.sh(sid, "export PATH=/workspace/bin:$PATH")
    for activity in ("stat", "list"):
        resp = await api.call(sid, "files", activity, path=".")
        assert resp.status_code == 200, resp.text
    await api.end(sid)


async def test_fifos_where_an_upload_might_go_do_not_hold_it(api: Api) -> None:
    env = await api.env()
    sid = (await api.session(env["name"]))["id"]
    await api.sh(sid, "for i in $(seq 100 400); do mkfifo .sandlot-upload-$i; done")
    resp = await api.call(sid, "files", "write", path="fine.txt", content="written")
    assert resp.status_code == 200, resp.text
    assert (await api.sh(sid, "cat fine.txt"))["stdout"] == "written"
    await api.end(sid)
