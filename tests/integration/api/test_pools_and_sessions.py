"""Environments, warm pools and the session lifecycle on real Docker and PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import secrets
import tarfile
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiodocker
import pytest

from sandlot.runtime.docker_images import ImageService
from tests.conftest import BUSYBOX
from tests.integration.conftest import Api
from tests.support.docker import kill_container

FAST = {"housekeeping_interval_seconds": 0.2}


async def eventually(check: Callable[[], Awaitable[bool]], timeout: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            pytest.fail("condition not reached in time")
        await asyncio.sleep(0.1)


async def pool_members(api: Api, env_id: str, status: str = "ready") -> list[dict]:
    rows = (await api.client.get("/v1/sandboxes", params={"status": status}, headers=api.h)).json()
    return [r for r in rows if r["environment_id"] == env_id]


async def container_count(sandbox_id: str) -> int:
    docker = aiodocker.Docker()
    try:
        return len(
            await docker.containers.list(all=True, filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]})
        )
    finally:
        await docker.close()


async def break_sandbox(sandbox_id: str) -> None:
    """Leave the container running but its workspace unwritable."""
    docker = aiodocker.Docker()
    try:
        for c in await docker.containers.list(filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]}):
            exe = await c.exec(["chmod", "0555", "/workspace"], user="1000")
            async with exe.start(detach=False) as stream:
                while await stream.read_out() is not None:
                    pass
            assert (await exe.inspect())["ExitCode"] == 0
    finally:
        await docker.close()


# -- environments ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"pool_size": [3, 1]}, "pool_size"),
        ({"pool_size": {"(": [1, 1]}}, "pool_size"),
        ({"features": {"nope": {}}}, "features"),
        ({"features": {"shell": {"applicable_images": "("}}}, "features"),
        ({"images": []}, "images"),
        ({"images": ["BAD IMAGE"]}, "images"),
        ({"memory_mb": 1}, "memory_mb"),
    ],
)
async def test_invalid_environments_are_422_naming_the_field(api: Api, fields: dict, field: str) -> None:
    body = {"name": "bad", "images": [BUSYBOX], **fields}
    resp = await api.client.post("/v1/environments", json=body, headers=api.h)
    assert resp.status_code == 422, resp.text
    assert field in resp.text


async def test_environment_crud_is_tenant_scoped(api: Api, new_tenant) -> None:
    env = await api.env(pool_size=0, memory_mb=256)
    got = (await api.client.get(f"/v1/environments/{env['name']}", headers=api.h)).json()
    assert got["id"] == env["id"] and got["memory_mb"] == 256
    patched = await api.client.patch(f"/v1/environments/{env['id']}", json={"memory_mb": 128}, headers=api.h)
    assert patched.json()["memory_mb"] == 128
    dup = await api.client.post(
        "/v1/environments", json={"name": env["name"], "images": [BUSYBOX]}, headers=api.h
    )
    assert dup.status_code == 409
    other = await new_tenant()
    assert (await api.client.get(f"/v1/environments/{env['id']}", headers=other)).status_code == 404
    assert (await api.client.delete(f"/v1/environments/{env['id']}", headers=api.h)).status_code == 204
    assert (await api.client.get(f"/v1/environments/{env['id']}", headers=api.h)).status_code == 404


# -- pools -------------------------------------------------------------------------------


async def test_pool_warms_to_min_and_replaces_a_dead_sandbox(api: Api) -> None:
    env = await api.env(pool_size=[2, 3], **FAST)

    async def two_ready() -> bool:
        return len(await pool_members(api, env["id"])) == 2

    await eventually(two_ready)
    victim = (await pool_members(api, env["id"]))[0]["id"]
    await kill_container(victim)

    async def replaced() -> bool:
        ready = {r["id"] for r in await pool_members(api, env["id"])}
        return victim not in ready and len(ready) == 2

    await eventually(replaced)


async def test_a_sandbox_failing_feature_housekeeping_is_replaced(api: Api) -> None:
    """A container that still runs but cannot run a command fails the shell feature's
    keepalive: the pool shuts it down, records why, and warms a replacement."""
    env = await api.env(pool_size=[1, 2], **FAST)

    async def one_ready() -> bool:
        return len(await pool_members(api, env["id"])) == 1

    await eventually(one_ready)
    victim = (await pool_members(api, env["id"]))[0]["id"]
    await break_sandbox(victim)

    async def replaced() -> bool:
        ready = {r["id"] for r in await pool_members(api, env["id"])}
        return victim not in ready and len(ready) == 1

    await eventually(replaced, timeout=40)
    events = (await api.client.get(f"/v1/sandboxes/{victim}/events", headers=api.h)).json()
    assert events[-1]["to_status"] == "offline"
    assert any("feature shell housekeeping failed" in e["reason"] for e in events), events
    assert await container_count(victim) == 0
    dead = (await api.client.get(f"/v1/sandboxes/{victim}", headers=api.h)).json()
    assert dead["status"] == "offline"
    await api.client.delete(f"/v1/environments/{env['id']}", headers=api.h)


async def test_a_warm_sandbox_is_reset_and_reused_between_sessions(api: Api) -> None:
    env = await api.env(pool_size=[1, 1], **FAST)

    async def one_ready() -> bool:
        return len(await pool_members(api, env["id"])) == 1

    await eventually(one_ready)
    first = await api.session(env["name"])
    assert first["warm"] is True
    await api.sh(first["id"], "echo secret > /workspace/left.txt; (sleep 600 &); cd /tmp; export X=1")
    await api.end(first["id"])
    await eventually(one_ready)
    second = await api.session(env["name"])
    assert second["sandbox_id"] == first["sandbox_id"] and second["warm"] is True
    res = await api.sh(second["id"], "ls -A /workspace; ps -o args | grep -c '[s]leep 600'; pwd; echo X=$X")
    assert res["stdout"] == "0\n/workspace\nX=\n"
    await api.end(second["id"])
    await api.client.delete(f"/v1/environments/{env['id']}", headers=api.h)


async def shell_pids(sandbox_id: str) -> set[int]:
    """Pids of the idle ``/bin/sh`` processes in a sandbox's container (persistent shells)."""
    docker = aiodocker.Docker()
    out = b""
    try:
        for c in await docker.containers.list(filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]}):
            exe = await c.exec(["ps", "-o", "pid,args"], user="1000")
            async with exe.start(detach=False) as stream:
                while (msg := await stream.read_out()) is not None:
                    out += msg.data
    finally:
        await docker.close()
    rows = (line.split(None, 1) for line in out.decode().splitlines()[1:])
    return {int(r[0]) for r in rows if len(r) == 2 and r[1].strip() == "/bin/sh" and r[0] != "1"}


async def test_a_pool_sandboxs_shell_opens_while_it_waits_and_serves_the_session(api: Api) -> None:
    # The process that makes a sandbox ready opens its shell. A refill may come from another API
    # process of this run (the pools' leader), so the test looks at the sandbox this process
    # makes ready again: the reset after a session it ends.
    env = await api.env(pool_size=[1, 1], **FAST)

    async def one_ready() -> bool:
        return len(await pool_members(api, env["id"])) == 1

    await eventually(one_ready)
    first = await api.session(env["name"])
    used = int((await api.sh(first["id"], "echo $$; cd /tmp; export Y=2"))["stdout"])
    assert (await api.sh(first["id"], "pwd; echo $Y"))["stdout"] == "/tmp\n2\n"
    await api.end(first["id"])

    async def rewarmed() -> bool:  # the reset killed that shell; a new one waits
        pids = await shell_pids(first["sandbox_id"])
        return bool(pids) and used not in pids

    await eventually(one_ready)
    await eventually(rewarmed)
    waiting = await shell_pids(first["sandbox_id"])
    second = await api.session(env["name"])
    assert second["sandbox_id"] == first["sandbox_id"]
    # $$ in a command is its persistent shell: the one that was opened while the sandbox waited,
    # bound to this session (the last session's cwd and exports are gone)
    pid, cwd, y = (await api.sh(second["id"], "echo $$; pwd; echo Y=$Y"))["stdout"].splitlines()
    assert int(pid) in waiting and cwd == "/workspace" and y == "Y="
    await api.sh(second["id"], "cd /tmp")
    assert (await api.sh(second["id"], "pwd"))["stdout"] == "/tmp\n"
    await api.end(second["id"])
    await api.client.delete(f"/v1/environments/{env['id']}", headers=api.h)


async def test_pool_size_zero_leaves_no_container_after_the_session(api: Api) -> None:
    env = await api.env(pool_size=0)
    session = await api.session(env["name"])
    assert session["warm"] is False
    assert (await api.sh(session["id"], "echo on-demand"))["stdout"] == "on-demand\n"
    await api.end(session["id"])
    assert await container_count(session["sandbox_id"]) == 0
    box = (await api.client.get(f"/v1/sandboxes/{session['sandbox_id']}", headers=api.h)).json()
    assert box["status"] == "offline"


async def test_a_full_pool_answers_503_with_retry_after(api: Api) -> None:
    env = await api.env(pool_size=[0, 1])
    first = await api.session(env["name"])
    resp = await api.client.post("/v1/sessions", json={"environment": env["name"]}, headers=api.h)
    assert resp.status_code == 503, resp.text
    assert resp.json()["code"] == "no_capacity" and resp.json()["retryable"] is True
    assert int(resp.headers["retry-after"]) >= 1
    await api.end(first["id"])


# -- failures and timeouts -----------------------------------------------------------------


async def test_a_killed_container_is_a_sandbox_state_error_then_a_replacement_serves(api: Api) -> None:
    env = await api.env(pool_size=[1, 2], **FAST)
    session = await api.session(env["name"])
    assert (await api.sh(session["id"], "echo before"))["stdout"] == "before\n"  # the shell is open
    await kill_container(session["sandbox_id"])
    resp = await api.call(session["id"], "shell", "run", command="echo hi")
    assert resp.status_code == 502, resp.text
    assert resp.json()["code"] == "sandbox_state_error" and resp.json()["retryable"]
    ended = (await api.client.get(f"/v1/sessions/{session['id']}", headers=api.h)).json()
    assert ended["status"] == "ended" and "sandbox lost" in ended["end_reason"]
    nxt = await api.session(env["name"])
    assert nxt["sandbox_id"] != session["sandbox_id"]
    assert (await api.sh(nxt["id"], "echo fine"))["stdout"] == "fine\n"
    await api.end(nxt["id"])
    await api.client.delete(f"/v1/environments/{env['id']}", headers=api.h)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [({"session_ttl_seconds": 1}, "ttl expired"), ({"idle_timeout_seconds": 1}, "idle timeout")],
)
async def test_ttl_and_idle_timeout_end_sessions(api: Api, fields: dict, reason: str) -> None:
    env = await api.env(pool_size=0, **fields)
    session = await api.session(env["name"])

    async def ended() -> bool:
        row = (await api.client.get(f"/v1/sessions/{session['id']}", headers=api.h)).json()
        return row["status"] == "ended"

    await eventually(ended, timeout=15)
    row = (await api.client.get(f"/v1/sessions/{session['id']}", headers=api.h)).json()
    assert row["end_reason"] == reason

    async def released() -> bool:
        return await container_count(session["sandbox_id"]) == 0

    await eventually(released, timeout=10)


async def test_an_environment_with_no_healthy_sandbox_reports_an_outage(api: Api, docker_runtime) -> None:
    image = f"sandlot/noshell:{secrets.token_hex(3)}"
    with tempfile.TemporaryDirectory() as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        with tarfile.open(rootfs, "w") as tar:
            info = tarfile.TarInfo("README")
            info.size = 2
            tar.addfile(info, io.BytesIO(b"hi"))
        await ImageService(docker_runtime.docker).import_rootfs(rootfs, image)
    try:
        env = await api.env(images=[image], pool_size=0, outage_grace_period_seconds=0)
        first = await api.client.post("/v1/sessions", json={"environment": env["name"]}, headers=api.h)
        assert first.status_code == 502 and first.json()["code"] == "sandbox_state_error"
        second = await api.client.post("/v1/sessions", json={"environment": env["name"]}, headers=api.h)
        assert second.status_code == 503 and second.json()["code"] == "environment_outage"
    finally:
        await docker_runtime.docker.images.delete(image, force=True)


async def test_session_ids_are_unique_and_chosen_ids_work(api: Api) -> None:
    env = await api.env(pool_size=0)
    chosen = f"my-session-{secrets.token_hex(3)}"
    session = await api.session(
        env["name"], session_id=chosen, manifest=[{"path": "input/data.txt", "content": "given"}]
    )
    assert session["client_ref"] == chosen and session["id"].startswith("ses_")
    assert (await api.sh(chosen, "cat input/data.txt"))["stdout"] == "given"
    assert (await api.sh(session["id"], "cat input/data.txt"))["stdout"] == "given"
    looks_like_ours = await api.client.post(
        "/v1/sessions", json={"environment": env["name"], "session_id": "ses_0123456789abcdef"}, headers=api.h
    )
    assert looks_like_ours.status_code == 422
    dup = await api.client.post(
        "/v1/sessions", json={"environment": env["name"], "session_id": chosen}, headers=api.h
    )
    assert dup.status_code == 409
    await api.end(chosen)


async def test_a_full_pool_takes_room_from_suspended_sessions_and_their_resumes_hydrate(api: Api) -> None:
    """#28.4: a suspended session keeps its frozen sandbox, counted in its pool's maximum:
    sessions left suspended filled their pool and every start failed (503). A start takes the
    frozen sandbox of a suspended session; that session's resume hydrates a replacement from
    its snapshot, taking room in turn (an idle member first, else another frozen sandbox)."""
    env = await api.env(pool_size=[1, 2])
    left = [await api.session(env["name"]) for _ in range(2)]
    for s in left:
        await api.sh(s["id"], f"echo {s['id']} > /workspace/note")
        assert (await api.client.post(f"/v1/sessions/{s['id']}/suspend", headers=api.h)).status_code == 200
    third = await api.session(env["name"])  # was 503: no_capacity
    status = {}
    for s in left:
        box = await api.client.get(f"/v1/sandboxes/{s['sandbox_id']}", headers=api.h)
        status[s["id"]] = box.json()["status"]
    assert sorted(status.values()) == ["in_session", "offline"], status
    taken = next(sid for sid, st in status.items() if st == "offline")
    other = next(sid for sid in status if sid != taken)
    resumed = await api.client.post(f"/v1/sessions/{taken}/resume", headers=api.h)
    assert (resumed.status_code, resumed.json()["how"]) == (200, "hydrated"), resumed.text
    other_box = next(s["sandbox_id"] for s in left if s["id"] == other)
    gone = await api.client.get(f"/v1/sandboxes/{other_box}", headers=api.h)
    assert gone.json()["status"] == "offline"  # the resume took the other frozen sandbox's room
    await api.end(third["id"])  # its sandbox goes back to the pool: an idle member
    resumed = await api.client.post(f"/v1/sessions/{other}/resume", headers=api.h)
    assert (resumed.status_code, resumed.json()["how"]) == (200, "hydrated"), resumed.text  # idle's room
    for sid in (taken, other):
        assert (await api.sh(sid, "cat /workspace/note"))["stdout"] == f"{sid}\n"
    for sid in (taken, other):
        await api.end(sid)


async def test_an_idle_pool_gives_back_what_its_busiest_moment_took(api: Api) -> None:
    """#28.5: an idle pool stayed at the size its busiest moment took it to, its idle members
    holding the tenant's quota. Those beyond the minimum go once idle for the environment's
    ``pool_idle_seconds``; with 0 they stay."""
    rounds = {"housekeeping_interval_seconds": 0.3}
    kept = await api.env(pool_size=[1, 3], pool_idle_seconds=0, **rounds)
    trimmed = await api.env(pool_size=[1, 3], pool_idle_seconds=1, **rounds)
    for env in (kept, trimmed):  # each pool taken to its maximum, then left idle
        sessions = [await api.session(env["name"]) for _ in range(3)]
        for session in sessions:
            await api.end(session["id"])
    counts: tuple[int, int] = (0, 0)
    for _ in range(200):
        counts = (len(await pool_members(api, kept["id"])), len(await pool_members(api, trimmed["id"])))
        if counts == (3, 1):
            break
        await asyncio.sleep(0.1)
    assert counts == (3, 1)  # the one as its busiest moment left it, the other down to its minimum
