"""What every fault test checks after its fault, against real processes: the store and the
engine agree (no leaked container, no phantom row), every snapshot the API acknowledged
restores byte-identically, and answers are clear codes (never a bare 500)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiodocker
import asyncpg
import httpx
import pytest

from sandlot.runtime.base import LABEL_INSTANCE, LABEL_SANDBOX
from sandlot.services.accounts import AccountService
from sandlot.store.engine import make_engine, make_sessionmaker
from tests.conftest import INSTANCE, migrated_pg_database
from tests.integration.servers import Server

Headers = dict[str, str]

#: Hashes of every file in the workspace, one ``<sha256>  ./<path>`` line each, sorted.
HASHES = "cd /workspace && find . -type f | sort | xargs -r sha256sum"
#: Codes a request may get while a fault lasts: clear, and never a bare 500.
CLEAR = {
    "sandbox_state_error",
    "runtime_unavailable",
    "store_unavailable",
    "disk_full",
    "conflict",
    "session_ended",
    "not_found",
}


def instance(name: str) -> str:
    """An instance label of this run (the session fixture removes its containers at the end)."""
    return f"{INSTANCE}-{name}-{secrets.token_hex(2)}"


def fault_server(db_url: str, mine: str, data_dir: Path, **settings: str) -> Server:
    """``sandlot serve`` on ``db_url`` with instance ``mine``, reconciling every second, in its
    own process group (a SIGKILL takes its workers with it); not started yet."""
    base = {
        "SANDLOT_DATABASE_URL": db_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": mine,
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_INTERVAL": "1",
        "SANDLOT_POOL_INTERVAL": "0.5",
        "SANDLOT_REAPER_INTERVAL": "1",
    }
    extra = {f"SANDLOT_{k.upper()}": v for k, v in settings.items()}
    return Server({**base, **extra}, data_dir.parent / f"{mine}.log", new_session=True, grace=20)


@pytest.fixture
async def db_url() -> AsyncIterator[str]:
    """A database of its own, at the migrations' head (a test that restarts the service or
    backdates rows touches nobody else's)."""
    async with migrated_pg_database() as url:
        yield url


async def tenant_headers(db_url: str) -> Headers:
    """A fresh tenant and key in the (migrated) database at ``db_url``."""
    engine = make_engine(db_url)
    try:
        accounts = AccountService(make_sessionmaker(engine))
        tenant = await accounts.create_tenant(f"f-{secrets.token_hex(4)}")
        key = await accounts.create_key(tenant.id)
    finally:
        await engine.dispose()
    return {"Authorization": f"Bearer {key.plaintext}"}


def assert_clear(resp: httpx.Response, *codes: int) -> None:
    """``resp`` is one of ``codes``, or a problem with a clear code (never a bare 500)."""
    if resp.status_code in codes:
        return
    assert resp.status_code != 500, resp.text
    assert resp.headers.get("content-type", "").startswith("application/problem+json"), resp.text
    assert resp.json()["code"] in CLEAR, resp.text


_ORPHAN_SESSIONS = """
    SELECT s.id FROM sessions s LEFT JOIN sandboxes b ON b.id = s.sandbox_id
    WHERE s.status <> 'ended' AND (b.id IS NULL OR b.status = 'offline')"""


async def live_rows(db_url: str, mine: str) -> tuple[set[str], set[str]]:
    """(the live sandbox rows of ``mine``, the unended sessions without a live sandbox)."""
    conn = await asyncpg.connect(db_url)
    try:
        rows = await conn.fetch("SELECT id FROM sandboxes WHERE instance = $1 AND status <> 'offline'", mine)
        orphans = await conn.fetch(_ORPHAN_SESSIONS)
    finally:
        await conn.close()
    return {r["id"] for r in rows}, {r["id"] for r in orphans}


async def containers(mine: str) -> dict[str, str]:
    """The containers labelled with instance ``mine``: sandbox id -> state."""
    docker = aiodocker.Docker()
    try:
        found = await docker.containers.list(all=True, filters={"label": [f"{LABEL_INSTANCE}={mine}"]})
    finally:
        await docker.close()
    return {c._container["Labels"].get(LABEL_SANDBOX, c.id): c._container["State"] for c in found}


async def wait_agreement(db_url: str, mine: str, within: float = 60) -> set[str]:
    """Wait until every live row of ``mine`` has a running (or paused) container, every
    container of ``mine`` a live row, and every session not ended a live sandbox; the live
    sandboxes."""
    deadline = time.monotonic() + within
    while True:
        (rows, orphans), boxes = await live_rows(db_url, mine), await containers(mine)
        alive = {k for k, state in boxes.items() if state in ("running", "paused")}
        if rows == alive == set(boxes) and not orphans:
            return rows
        assert time.monotonic() < deadline, f"store {sorted(rows)} vs containers {boxes}; sessions {orphans}"
        await asyncio.sleep(0.5)


def partial_blobs(blobs: Path) -> list[Path]:
    """Blob files still being written (or left half-written): their temporary names."""
    return list(blobs.rglob(".*.tmp"))


async def assert_blobs_whole(db_url: str, blobs: Path) -> None:
    """No partial blob, and every blob a snapshot row needs is there, whole: a tar snapshot's
    own blob, and every content blob (the references' foreign key makes every content a
    snapshot names a row of ``content_blobs``)."""
    assert not await asyncio.to_thread(partial_blobs, blobs)
    conn = await asyncpg.connect(db_url)
    try:
        rows = await conn.fetch("SELECT blob_key, size_bytes FROM snapshots WHERE storage = 'tar'")
        rows += await conn.fetch("SELECT blob_key, size_bytes FROM content_blobs")
    finally:
        await conn.close()
    for row in rows:
        found = await asyncio.to_thread((blobs / row["blob_key"]).stat)
        assert found.st_size == row["size_bytes"], row["blob_key"]


async def sh(http: httpx.AsyncClient, session_id: str, command: str) -> str:
    resp = await http.post(f"/v1/sessions/{session_id}/features/shell/run", json={"command": command})
    assert resp.status_code == 200, resp.text
    assert resp.json()["exit_code"] == 0, resp.text
    return str(resp.json()["stdout"])


async def new_session(http: httpx.AsyncClient, environment: str, **fields: Any) -> str:
    resp = await http.post("/v1/sessions", json={"environment": environment, **fields})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def assert_restores(http: httpx.AsyncClient, environment: str, acked: dict[str, str]) -> None:
    """Every acknowledged snapshot (id -> the workspace's hashes when it was taken) restores
    onto a new session byte for byte; the sessions are ended afterwards."""
    for snapshot_id, hashes in acked.items():
        sid = await new_session(http, environment, snapshot_id=snapshot_id)
        try:
            assert await sh(http, sid, HASHES) == hashes, snapshot_id
        finally:
            await http.delete(f"/v1/sessions/{sid}")
