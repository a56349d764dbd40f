"""Background processes against a real ``sandlot serve`` on real Docker: output read from any
offset, a WebSocket stream that resumes after being dropped with nothing lost or doubled, a
kill that leaves no descendant behind, status with exit code, duration, CPU time and memory."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest
import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.integration.conftest import NewTenant
from tests.support.processes import Live


@pytest.fixture
async def live(live_server: str, new_tenant: NewTenant) -> AsyncIterator[Live]:
    client = Live(live_server, await new_tenant())
    yield client
    await client.http.aclose()


async def test_websocket_output_resumes_exactly_after_three_drops(live: Live) -> None:
    sid = await live.session()
    proc = await live.start(sid, "for i in $(seq 1 100000); do echo $i; done")
    expected = "".join(f"{i}\n" for i in range(1, 100001)).encode()
    received = bytearray()
    drops = 0
    final: dict | None = None
    while final is None:
        async with websockets.connect(
            live.ws_url(sid, proc["id"], len(received)), additional_headers=live.h, max_size=None
        ) as ws:
            # drop the connection at its first frame three times mid-stream (frames are at most
            # 128 KiB and a last chunk: three never take the whole output)
            budget = 1 if drops < 3 else None
            got_here = 0
            async for message in ws:
                if isinstance(message, str):
                    final = json.loads(message)
                    break
                received += message
                got_here += len(message)
                if budget is not None and got_here >= budget:
                    drops += 1
                    break
    assert drops == 3
    assert final["type"] == "exit" and final["exit_code"] == 0 and final["status"] == "exited"
    assert final["offset"] == len(expected)
    assert bytes(received) == expected  # 1..100000, each once, in order


async def test_output_from_an_offset_over_http(live: Live) -> None:
    sid = await live.session()
    proc = await live.start(sid, "printf abcdef; printf XYZ >&2; exit 4")
    done = await live.wait_done(sid, proc["id"])
    assert done["status"] == "exited" and done["exit_code"] == 4 and done["output_bytes"] == 9
    assert done["duration_seconds"] is not None and done["duration_seconds"] >= 0
    out = f"/v1/sessions/{sid}/processes/{proc['id']}/output"
    resp = await live.http.get(out, params={"offset": 2, "limit": 3})
    assert resp.content == b"cde"
    assert resp.headers["sandlot-next-offset"] == "5" and resp.headers["sandlot-complete"] == "false"
    rest = await live.http.get(out, params={"offset": 5})
    assert rest.content == b"fXYZ" and rest.headers["sandlot-complete"] == "true"


async def test_output_is_capped_but_the_process_carries_on(live: Live) -> None:
    sid = await live.session()  # the live server keeps 1 MiB per process
    proc = await live.start(sid, "yes | head -c 3000000; echo finished >&2; exit 0")
    done = await live.wait_done(sid, proc["id"])
    assert done["status"] == "exited" and done["exit_code"] == 0
    assert done["output_bytes"] == 1 << 20


async def test_processes_keep_their_output_on_disk_not_on_the_small_state_tmpfs(live: Live) -> None:
    """A session that fills /dev/shm (64 MB, where the shell keeps its state) still runs
    background processes whose output is kept whole: outputs are on the sandbox's disk. On the
    state tmpfs two verbose processes filled it, after which no process started and a relayed
    stream carried the start script's own ``!5`` as output."""
    sid = await live.session()
    await live.sh(sid, "head -c 66000000 /dev/zero > /dev/shm/mine 2>/dev/null; true")
    for _ in range(2):
        proc = await live.start(sid, "head -c 900000 /dev/zero | tr '\\0' x; exit 3")
        received = bytearray()
        async with websockets.connect(
            live.ws_url(sid, proc["id"], 0), additional_headers=live.h, max_size=None
        ) as ws:
            async for message in ws:
                if isinstance(message, str):
                    final = json.loads(message)
                    break
                received += message
        assert bytes(received) == b"x" * 900000
        assert final["status"] == "exited" and final["exit_code"] == 3, final
        done = await live.wait_done(sid, proc["id"])
        assert done["exit_code"] == 3 and done["output_bytes"] == 900000


async def test_a_process_an_older_version_started_is_still_found(live: Live, pg_url: str) -> None:
    """Rows from before processes recorded their directory (``dir`` NULL) are looked for where
    older versions kept them, on the state tmpfs."""
    sid = await live.session()
    proc = await live.start(sid, "printf old-place; exit 5")
    await live.wait_done(sid, proc["id"])
    await live.sh(
        sid, f"mkdir -p /dev/shm/.sandlot/proc && mv /tmp/.sandlot/proc/{proc['id']} /dev/shm/.sandlot/proc/"
    )
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("UPDATE processes SET dir = NULL, status = 'running' WHERE id = $1", proc["id"])
    finally:
        await conn.close()
    done = await live.wait_done(sid, proc["id"])
    assert (done["status"], done["exit_code"], done["output_bytes"]) == ("exited", 5, 9)
    out = await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}/output")
    assert out.content == b"old-place"


async def test_a_process_started_on_a_full_disk_is_507(live: Live) -> None:
    name = f"small-{secrets.token_hex(3)}"
    env = await live.http.post(
        "/v1/environments", json={"name": name, "images": ["sandlot/busybox:latest"], "disk_mb": 64}
    )
    assert env.status_code == 201, env.text
    sid = (await live.http.post("/v1/sessions", json={"environment": name})).json()["id"]
    await live.sh(sid, "head -c 100000000 /dev/zero > /workspace/fill 2>/dev/null; true")
    resp = await live.http.post(f"/v1/sessions/{sid}/processes", json={"command": "echo hi"})
    assert resp.status_code == 507 and resp.json()["code"] == "disk_full", resp.text
    await live.sh(sid, "rm /workspace/fill")
    proc = await live.start(sid, "echo hi")  # room again: it starts
    assert (await live.wait_done(sid, proc["id"]))["exit_code"] == 0


async def test_killing_a_process_leaves_none_of_its_children(live: Live) -> None:
    sid = await live.session()
    # children in the tree, a grandchild in the background, and one that left the tree
    proc = await live.start(sid, "sleep 301 & sleep 302 & (sleep 303 &); sh -c 'sleep 304' & sleep 305")
    await asyncio.sleep(0.5)
    count = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done | grep -c '^sleep 30[1-5]'"
    assert (await live.sh(sid, count)).strip() == "5"
    killed = (await live.http.post(f"/v1/sessions/{sid}/processes/{proc['id']}/kill")).json()
    assert killed["status"] == "killed" and killed["exit_code"] is None
    assert (await live.sh(sid, count + " || true")).strip() == "0"
    listed = (await live.http.get(f"/v1/sessions/{sid}/processes")).json()
    assert [p["status"] for p in listed] == ["killed"]


async def test_status_reports_cpu_time_and_peak_memory_while_running(live: Live) -> None:
    sid = await live.session()
    proc = await live.start(sid, "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done; exit 7")
    seen_cpu = seen_mem = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = (await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}")).json()
        seen_cpu |= (row["cpu_seconds"] or 0) > 0
        seen_mem |= (row["peak_memory_kb"] or 0) > 0
        if row["status"] != "running":
            break
        await asyncio.sleep(0.3)
    assert row["status"] == "exited" and row["exit_code"] == 7
    assert seen_cpu and seen_mem
    assert row["duration_seconds"] > 0


async def test_processes_are_tenant_scoped_and_inputs_checked(live: Live, new_tenant: NewTenant) -> None:
    sid = await live.session()
    proc = await live.start(sid, "sleep 30")
    other = await new_tenant()
    base = f"/v1/sessions/{sid}/processes"
    for method, path in (
        ("GET", f"{base}/{proc['id']}"),
        ("POST", f"{base}/{proc['id']}/kill"),
        ("GET", base),
    ):
        assert (await live.http.request(method, path, headers=other)).status_code == 404
    assert (await live.http.post(base, json={"command": ""})).status_code == 422
    assert (await live.http.post(base, json={"command": "x", "env": {"1BAD": "v"}})).status_code == 422
    assert (await live.http.get(f"{base}/prc_nope")).status_code == 404
    bad = await live.http.get(f"{base}/{proc['id']}/output", params={"offset": -1})
    assert bad.status_code == 400 or bad.status_code == 422
    with pytest.raises((InvalidStatus, ConnectionClosed)):
        async with websockets.connect(live.ws_url(sid, proc["id"], 0), additional_headers=other) as ws:
            await ws.recv()
    await live.http.post(f"{base}/{proc['id']}/kill")
