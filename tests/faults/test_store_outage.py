"""Fault: PostgreSQL unreachable for 10 s under a running ``sandlot serve`` (a PostgreSQL of the
test's own, stopped and started by its own ``pg_ctl``; the shared one is never touched).

While it is down every request gets an answer, and a clear one (503 ``store_unavailable``, or
a success when the request needed no store), never a bare 500 or a hang; when it is back the
same server serves again without a restart, and nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandlot.store import migrate
from tests.conftest import BUSYBOX
from tests.faults.conftest import (
    HASHES,
    assert_clear,
    assert_restores,
    fault_server,
    instance,
    new_session,
    sh,
    tenant_headers,
    wait_agreement,
)
from tests.faults.postgres import OwnPostgres

OUTAGE = 10.0


@pytest.fixture
def own_pg() -> Iterator[OwnPostgres]:
    pg = OwnPostgres()
    try:
        pg.start()
        yield pg
    finally:
        pg.destroy()


async def _during_outage(http: httpx.AsyncClient, session_id: str) -> list[int]:
    """Ask for ``OUTAGE`` seconds; every answer must be clear. The statuses seen."""
    seen: list[int] = []
    asks = [
        lambda: http.get("/v1/sessions"),
        lambda: http.post(f"/v1/sessions/{session_id}/features/shell/run", json={"command": "echo x"}),
        lambda: http.post(f"/v1/sessions/{session_id}/checkpoints"),
        lambda: http.post("/v1/sessions", json={"environment": "p"}),
        lambda: http.post("/v1/sandboxes", json={"image": BUSYBOX}),
        lambda: http.get("/readyz"),
    ]
    end = time.monotonic() + OUTAGE
    while time.monotonic() < end:
        for ask in asks:
            try:
                resp = await ask()
            except httpx.TimeoutException:
                pytest.fail("a request hung while the store was down")
            if resp.request.url.path == "/readyz":  # not a problem: the checks, one failing
                assert resp.status_code == 503 and resp.json()["checks"]["database"] != "ok", resp.text
            else:
                assert_clear(resp, 200, 201)
            seen.append(resp.status_code)
        await asyncio.sleep(0.2)
    return seen


@pytest.mark.timeout(150)
async def test_the_service_answers_clearly_while_the_store_is_down_and_recovers_alone(
    own_pg: OwnPostgres, tmp_path: Path
) -> None:
    await asyncio.to_thread(migrate.upgrade, own_pg.url)
    mine = instance("pg")
    headers = await tenant_headers(own_pg.url)
    with fault_server(own_pg.url, mine, tmp_path / "data") as server:
        async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=30) as http:
            assert (
                await http.post("/v1/environments", json={"name": "p", "images": [BUSYBOX]})
            ).status_code == 201
            sid = await new_session(http, "p")
            await sh(http, sid, "head -c 1000000 /dev/urandom > a.bin; echo one > f")
            snap = await http.post(f"/v1/sessions/{sid}/checkpoints")
            assert snap.status_code == 201, snap.text
            acked = {snap.json()["id"]: await sh(http, sid, HASHES)}

            await asyncio.to_thread(own_pg.stop)
            try:
                seen = await _during_outage(http, sid)
            finally:
                await asyncio.to_thread(own_pg.start)
            assert 503 in seen, seen
            print(f"answers while the store was down: {sorted(set(seen))}")

            deadline = time.monotonic() + 60
            while (await http.get("/readyz")).status_code != 200:
                assert time.monotonic() < deadline, "the server did not recover"
                await asyncio.sleep(0.5)
            # the same process serves again: reads, writes, containers
            listed = {s["id"] for s in (await http.get("/v1/sessions")).json()}
            assert sid in listed
            assert await sh(http, sid, "cat f") == "one\n"
            again = await http.post(f"/v1/sessions/{sid}/checkpoints")
            assert again.status_code == 201, again.text
            acked[again.json()["id"]] = await sh(http, sid, HASHES)
            await wait_agreement(own_pg.url, mine)
            await assert_restores(http, "p", acked)
            await wait_agreement(own_pg.url, mine)
