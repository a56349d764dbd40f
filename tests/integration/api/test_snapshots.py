"""Checkpoints, snapshots, suspend and resume on real Docker and PostgreSQL."""

from __future__ import annotations

import asyncio
import io
import tarfile

from tests.integration.conftest import Api, NewTenant
from tests.support.docker import remove_container

HASHES = "(cd /workspace && find . -type f | sort | xargs sha256sum)"


async def test_a_suspended_session_survives_losing_its_container(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    make = (
        "mkdir -p d && i=0; while [ $i -lt 1000 ]; do "
        "head -c 52429 /dev/urandom > d/f$i; i=$((i+1)); done; cd d; export MARK=kept"
    )
    assert (await api.sh(s["id"], make))["exit_code"] == 0
    before = (await api.sh(s["id"], HASHES))["stdout"]
    assert before.count("\n") == 1000
    assert int((await api.sh(s["id"], "du -sk /workspace | cut -f1"))["stdout"]) >= 50 * 1024

    suspended = await api.client.post(f"/v1/sessions/{s['id']}/suspend", headers=api.h)
    assert suspended.status_code == 200, suspended.text
    assert suspended.json()["status"] == "suspended"
    state = suspended.json()["state"]  # what resuming needs, as JSON
    assert state["sandbox_id"] == s["sandbox_id"] and state["environment"] == env["name"]
    assert state["image"] == "sandlot/busybox:latest" and state["snapshot_id"].startswith("snp_")
    assert state["shell"]["cwd"] == "/workspace/d" and "MARK='kept'" in state["shell"]["state"]
    blocked = await api.call(s["id"], "shell", "run", command="true")
    assert blocked.status_code == 409  # resume first

    await remove_container(s["sandbox_id"])
    resumed = await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)
    assert resumed.status_code == 200, resumed.text
    body = resumed.json()
    assert body["how"] == "hydrated" and body["snapshot_id"]
    assert body["session"]["status"] == "active" and body["session"]["sandbox_id"] != s["sandbox_id"]

    assert (await api.sh(s["id"], HASHES))["stdout"] == before  # every file, byte for byte
    assert (await api.sh(s["id"], "pwd; echo $MARK"))["stdout"] == "/workspace/d\nkept\n"

    await api.sh(s["id"], "echo more >> f1; echo more >> f500; printf x >> f999")
    point = await api.client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)
    assert point.status_code == 201, point.text
    assert point.json()["diff"] == {"added": [], "modified": ["d/f1", "d/f500", "d/f999"], "deleted": []}
    assert point.json()["file_count"] == 1000
    await api.end(s["id"])


async def test_checkpoint_diffs_download_and_a_session_from_a_snapshot(
    api: Api, new_tenant: NewTenant
) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    await api.sh(s["id"], "echo a > a.txt; echo b > b.txt; mkdir sub; echo s > sub/s.txt")
    first = (await api.client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)).json()
    assert first["diff"] == {"added": ["a.txt", "b.txt", "sub", "sub/s.txt"], "modified": [], "deleted": []}
    await api.sh(s["id"], "echo changed > a.txt; rm b.txt; echo c > c.txt")
    second = (await api.client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)).json()
    assert second["parent_id"] == first["id"]
    assert second["diff"] == {"added": ["c.txt"], "modified": ["a.txt"], "deleted": ["b.txt"]}
    listed = (await api.client.get(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)).json()
    assert [c["id"] for c in listed] == [first["id"], second["id"]]

    archive = await api.client.get(f"/v1/snapshots/{second['id']}/archive", headers=api.h)
    assert archive.status_code == 200 and archive.headers["content-type"] == "application/x-tar"
    with tarfile.open(fileobj=io.BytesIO(archive.content)) as tar:
        names = sorted(m.name for m in tar.getmembers())
        assert names == ["a.txt", "c.txt", "sub", "sub/s.txt"]
        handle = tar.extractfile("a.txt")
        assert handle is not None and handle.read() == b"changed\n"
        assert tar.getmember("a.txt").uid == 1000

    other = await new_tenant()
    assert (await api.client.get(f"/v1/snapshots/{second['id']}", headers=other)).status_code == 404
    assert (await api.client.get(f"/v1/snapshots/{second['id']}/archive", headers=other)).status_code == 404
    stolen = await api.client.post(
        "/v1/sessions", json={"environment": env["name"], "snapshot_id": second["id"]}, headers=other
    )
    assert stolen.status_code == 404

    copy = await api.session(env["name"], snapshot_id=second["id"])
    assert (await api.sh(copy["id"], "cat a.txt c.txt sub/s.txt; ls"))["stdout"] == (
        "changed\nc\ns\na.txt\nc.txt\nsub\n"
    )
    assert (await api.sh(copy["id"], "touch mine; ls -ln mine | awk '{print $3}'"))["stdout"] == "1000\n"
    await api.end(copy["id"])
    await api.end(s["id"])


async def test_resume_reattaches_to_a_living_sandbox(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    await api.sh(s["id"], "cd /tmp; echo kept > /workspace/k")
    assert (await api.client.post(f"/v1/sessions/{s['id']}/suspend", headers=api.h)).status_code == 200
    resumed = (await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)).json()
    assert resumed["how"] == "reattached" and resumed["session"]["sandbox_id"] == s["sandbox_id"]
    assert (await api.sh(s["id"], "pwd; cat /workspace/k"))["stdout"] == "/tmp\nkept\n"
    again = (await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)).json()
    assert again["how"] == "reattached"  # resuming an active session is harmless
    await api.end(s["id"])
    ended = await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)
    assert ended.status_code == 409


async def test_idle_sessions_are_suspended_when_the_environment_says_so(api: Api) -> None:
    env = await api.env(pool_size=0, idle_timeout_seconds=1, idle_action="suspend")
    s = await api.session(env["name"])
    await api.sh(s["id"], "echo idle > f")
    for _ in range(300):  # the shared store holds every earlier test's sessions: allow a busy reaper
        got = (await api.client.get(f"/v1/sessions/{s['id']}", headers=api.h)).json()
        if got["status"] != "active":
            break
        await asyncio.sleep(0.2)
    assert got["status"] == "suspended" and got["state"]["snapshot_id"]
    resumed = (await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)).json()
    assert resumed["how"] == "reattached"
    assert (await api.sh(s["id"], "cat f"))["stdout"] == "idle\n"
    await api.end(s["id"])
