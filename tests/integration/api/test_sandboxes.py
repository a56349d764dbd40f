"""The first end-to-end path through the HTTP API, on real PostgreSQL and Docker."""

from __future__ import annotations

import asyncio
import os
import resource

import aiodocker
from litestar.testing import AsyncTestClient

from sandlot.runtime.base import LABEL_SANDBOX
from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant


async def _create(client: AsyncTestClient, headers: Headers, **body: object) -> dict:
    resp = await client.post("/v1/sandboxes", json={"image": BUSYBOX, **body}, headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()


async def _containers_of(sandbox_id: str) -> list[object]:
    docker = aiodocker.Docker()
    try:
        return await docker.containers.list(all=True, filters={"label": [f"{LABEL_SANDBOX}={sandbox_id}"]})
    finally:
        await docker.close()


async def test_create_exec_files_delete_leaves_nothing(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    sandbox = await _create(client, h)
    sid = sandbox["id"]
    assert sandbox["status"] == "ready" and sandbox["runtime"] == "docker"
    assert len(await _containers_of(sid)) == 1

    resp = await client.post(f"/v1/sandboxes/{sid}/exec", json={"command": "echo hi"}, headers=h)
    assert resp.status_code == 200
    body = resp.json()
    assert {k: body[k] for k in ("exit_code", "stdout", "stderr")} == {
        "exit_code": 0,
        "stdout": "hi\n",
        "stderr": "",
    }

    blob = os.urandom(10 * 1024 * 1024)
    put = await client.put(
        f"/v1/sandboxes/{sid}/files", params={"path": "data/blob.bin"}, content=blob, headers=h
    )
    assert put.status_code == 200, put.text
    assert put.json() == {"path": "/workspace/data/blob.bin", "size": len(blob)}
    got = await client.get(f"/v1/sandboxes/{sid}/files", params={"path": "data/blob.bin"}, headers=h)
    assert got.status_code == 200
    assert got.content == blob

    assert (await client.delete(f"/v1/sandboxes/{sid}", headers=h)).status_code == 204
    assert await _containers_of(sid) == []
    after = (await client.get(f"/v1/sandboxes/{sid}", headers=h)).json()
    assert after["status"] == "offline"
    events = (await client.get(f"/v1/sandboxes/{sid}/events", headers=h)).json()
    assert [e["to_status"] for e in events] == [
        "created",
        "setting_up",
        "ready",
        "shutting_down",
        "offline",
    ]
    # deleting again is harmless
    assert (await client.delete(f"/v1/sandboxes/{sid}", headers=h)).status_code == 204


async def test_exec_timeout_through_the_api(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    sid = (await _create(client, h))["id"]
    resp = await client.post(
        f"/v1/sandboxes/{sid}/exec", json={"command": ["sleep", "100"], "timeout": 1}, headers=h
    )
    body = resp.json()
    assert body["timed_out"] is True and body["exit_code"] is None
    await client.delete(f"/v1/sandboxes/{sid}", headers=h)


async def test_binary_output_comes_back_base64(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    sid = (await _create(client, h))["id"]
    resp = await client.post(
        f"/v1/sandboxes/{sid}/exec",
        json={"command": "cat", "stdin": "/wA=", "stdin_encoding": "base64"},
        headers=h,
    )
    assert resp.json()["encoding"] == "base64" and resp.json()["stdout"] == "/wA="
    await client.delete(f"/v1/sandboxes/{sid}", headers=h)


async def test_a_gigabyte_of_output_is_truncated_without_exhausting_memory(
    client: AsyncTestClient, new_tenant: NewTenant, app_settings
) -> None:
    h = await new_tenant()
    sid = (await _create(client, h))["id"]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    resp = await client.post(
        f"/v1/sandboxes/{sid}/exec",
        json={"command": "head -c 1073741824 /dev/zero | tr '\\0' x", "timeout": 120},
        headers=h,
    )
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    body = resp.json()
    assert body["exit_code"] == 0 and body["truncated"] is True
    assert len(body["stdout"]) == app_settings.exec_output_limit
    assert grown_kb < 200 * 1024, f"server grew by {grown_kb} KiB"
    await client.delete(f"/v1/sandboxes/{sid}", headers=h)


async def test_ttl_expiry_shuts_the_sandbox_down(client: AsyncTestClient, new_tenant: NewTenant) -> None:
    h = await new_tenant()
    sid = (await _create(client, h, ttl_seconds=1))["id"]
    for _ in range(100):
        if (await client.get(f"/v1/sandboxes/{sid}", headers=h)).json()["status"] == "offline":
            break
        await asyncio.sleep(0.1)
    events = (await client.get(f"/v1/sandboxes/{sid}/events", headers=h)).json()
    assert events[-1]["to_status"] == "offline"
    assert events[-1]["reason"] == "ttl expired"
    assert await _containers_of(sid) == []


async def test_concurrent_deletes_of_one_sandbox_all_succeed(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    """Two shutdowns racing (a client's delete, the reconciler, a broken-sandbox path) both end
    by settling the sandbox offline; neither gets a 409 from moving offline to offline."""
    h = await new_tenant()
    for _ in range(3):
        sid = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=h)).json()["id"]
        answers = await asyncio.gather(*(client.delete(f"/v1/sandboxes/{sid}", headers=h) for _ in range(4)))
        assert [a.status_code for a in answers] == [204] * 4, [a.text for a in answers]
        assert (await client.get(f"/v1/sandboxes/{sid}", headers=h)).json()["status"] == "offline"


async def test_a_disk_limit_smaller_than_the_image_is_the_callers_error(
    client: AsyncTestClient, new_tenant: NewTenant
) -> None:
    """The engine cannot size a layer below its image: that is a 422 naming ``disk_mb``, not a
    retryable 503 (retrying the same request can never work)."""
    h = await new_tenant()
    answer = await client.post("/v1/sandboxes", json={"image": "sandlot/python:3", "disk_mb": 16}, headers=h)
    assert answer.status_code == 422, answer.text
    assert answer.json()["retryable"] is False and "disk_mb" in answer.text
    listed = (await client.get("/v1/sandboxes", headers=h)).json()
    assert all(r["status"] == "offline" for r in listed)  # nothing left half-made
