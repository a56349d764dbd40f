"""Fault: the server SIGKILLed (its whole process group) mid-create and mid-snapshot, then
started again on the same database and data directory.

Afterwards no container is leaked and no row is a phantom, no partial blob is left and every
snapshot row's blob is whole, and every acknowledged snapshot restores byte for byte. A create
cut short leaves a row in ``created``/``setting_up`` that the reconciler finishes once it is
older than ``STUCK_AFTER`` (two minutes: it may be another process's work in progress); the
test ages those rows instead of waiting two minutes."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import asyncpg
import httpx
import pytest

from tests.conftest import BUSYBOX
from tests.faults.conftest import (
    HASHES,
    assert_blobs_whole,
    assert_restores,
    fault_server,
    instance,
    new_session,
    partial_blobs,
    sh,
    tenant_headers,
    wait_agreement,
)
from tests.integration.servers import Server

_AGE_STUCK = """
    UPDATE sandboxes SET updated_at = updated_at - interval '10 minutes'
    WHERE instance = $1 AND status IN ('created', 'setting_up', 'acquired', 'exiting_session')"""


async def _kill_mid_create(server: Server, http: httpx.AsyncClient) -> list[str]:
    """SIGKILL while a sandbox and a session are being created; the paths of those that were
    acknowledged."""
    flights = [
        asyncio.ensure_future(http.post("/v1/sandboxes", json={"image": BUSYBOX})),
        asyncio.ensure_future(http.post("/v1/sessions", json={"environment": "c"})),
    ]
    await asyncio.sleep(0.2)
    server.stop(signal.SIGKILL)
    done = await asyncio.gather(*flights, return_exceptions=True)
    return [
        f"{r.url.path.rstrip('/')}/{r.json()['id']}"
        for r in done
        if isinstance(r, httpx.Response) and r.status_code == 201
    ]


async def _kill_mid_snapshot(
    server: Server, http: httpx.AsyncClient, session_id: str, blobs: Path
) -> str | None:
    """SIGKILL once the checkpoint's blob is being written; its id if it was acknowledged."""
    flight = asyncio.ensure_future(http.post(f"/v1/sessions/{session_id}/checkpoints"))
    deadline = time.monotonic() + 60
    while not await asyncio.to_thread(partial_blobs, blobs) and not flight.done():
        assert time.monotonic() < deadline, "the checkpoint never started writing"
        await asyncio.sleep(0.01)
    server.stop(signal.SIGKILL)
    try:
        resp = await flight
    except httpx.TransportError:
        return None
    return str(resp.json()["id"]) if resp.status_code == 201 else None


@pytest.mark.timeout(170)
async def test_a_server_killed_mid_create_and_mid_snapshot_restarts_clean(
    db_url: str, tmp_path: Path
) -> None:
    mine = instance("sigkill")
    headers = await tenant_headers(db_url)
    data = tmp_path / "data"
    server = fault_server(db_url, mine, data)
    try:
        server.start()
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
            assert (
                await http.post("/v1/environments", json={"name": "c", "images": [BUSYBOX]})
            ).status_code == 201
            sid = await new_session(http, "c")
            await sh(http, sid, "head -c 4000000 /dev/urandom > a.bin; echo one > f")
            snap = await http.post(f"/v1/sessions/{sid}/checkpoints")
            assert snap.status_code == 201, snap.text
            acked = {snap.json()["id"]: await sh(http, sid, HASHES)}
            created = await _kill_mid_create(server, http)
            print(f"acknowledged before the kill mid-create: {created}")

        server.start()
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
            for path in created:  # acknowledged creates are still there
                assert (await http.get(path)).status_code == 200, path
            await sh(http, sid, "head -c 24000000 /dev/urandom > b.bin; echo two > f")
            hashes = await sh(http, sid, HASHES)
            if late := await _kill_mid_snapshot(server, http, sid, data / "blobs"):
                acked[late] = hashes
            print(f"the checkpoint cut short was acknowledged: {late}")

        server.start()
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
            await assert_blobs_whole(db_url, data / "blobs")
            conn = await asyncpg.connect(db_url)
            try:
                await conn.execute(_AGE_STUCK, mine)
            finally:
                await conn.close()
            await wait_agreement(db_url, mine)
            await assert_restores(http, "c", acked)
            assert await sh(http, sid, "cat f") == "two\n"  # the session outlived the kills
            checkpoint = await http.post(f"/v1/sessions/{sid}/checkpoints")
            assert checkpoint.status_code == 201, checkpoint.text
            await assert_blobs_whole(db_url, data / "blobs")
            await wait_agreement(db_url, mine)
    finally:
        server.stop(signal.SIGKILL)
