"""Garbage collection of snapshot contents on real Docker and PostgreSQL: what it takes and
leaves, and that it never takes a content a snapshot needs while snapshots are being taken
and deleted beside it."""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import asyncpg
import httpx
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from sandlot.services.snapshot_gc import SnapshotCollector
from sandlot.store.blobs import FileBlobStore
from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.repositories import SessionRepository
from tests.conftest import INSTANCE
from tests.integration.api.conftest import Own, checkpoint, state, tenant_id
from tests.integration.conftest import Api, NewTenant
from tests.integration.servers import Server

ROUNDS = 24
ROUNDS_WITHIN = 150.0  # seconds: the rounds stop here even if not all ran


async def collector(pg_url: str, blobs: Path, grace: float) -> tuple[SnapshotCollector, AsyncEngine]:
    engine = make_engine(pg_url)
    return SnapshotCollector(make_sessionmaker(engine), FileBlobStore(blobs), grace_seconds=grace), engine


async def rows_of(pg_url: str, tenant: str) -> dict[str, str]:
    """The tenant's content blobs: hash -> blob key."""
    conn = await asyncpg.connect(pg_url)
    try:
        found = await conn.fetch("SELECT digest, blob_key FROM content_blobs WHERE tenant_id = $1", tenant)
    finally:
        await conn.close()
    return {r["digest"]: r["blob_key"] for r in found}


async def referenced(pg_url: str, tenant: str) -> set[str]:
    conn = await asyncpg.connect(pg_url)
    try:
        found = await conn.fetch("SELECT DISTINCT digest FROM snapshot_blobs WHERE tenant_id = $1", tenant)
    finally:
        await conn.close()
    return {r["digest"] for r in found}


async def digest_of(api: Api, session_id: str, path: str) -> str:
    return str((await api.sh(session_id, f"sha256sum {path} | cut -c1-64"))["stdout"]).strip()


async def test_collection_takes_only_what_no_snapshot_needs(api: Api, pg_url: str, data_dir: Path) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    assert (await api.sh(s["id"], "echo only-in-one > a; echo in-both > b"))["exit_code"] == 0
    a, b = await digest_of(api, s["id"], "a"), await digest_of(api, s["id"], "b")
    one = await checkpoint(api, s["id"])
    assert (await api.sh(s["id"], "rm a; echo new > c"))["exit_code"] == 0
    await checkpoint(api, s["id"])
    tenant = await tenant_id(api)
    assert (await api.client.delete(f"/v1/snapshots/{one['id']}", headers=api.h)).status_code == 204
    assert (await api.client.get(f"/v1/snapshots/{one['id']}", headers=api.h)).status_code == 404
    before = await rows_of(pg_url, tenant)
    stray_old = data_dir / "blobs" / "cas" / tenant / "zz" / f"{'0' * 64}.stray"
    stray_new = stray_old.with_suffix(".young")
    stray_old.parent.mkdir(parents=True, exist_ok=True)
    stray_old.write_bytes(b"left by a process killed before its commit")
    stray_new.write_bytes(b"maybe a commit in progress")
    two_hours_ago = time.time() - 7200
    os.utime(stray_old, (two_hours_ago, two_hours_ago))

    patient, engine = await collector(pg_url, data_dir / "blobs", grace=3600)
    try:
        await patient.collect()  # a just-deleted snapshot's content is younger than the grace
        assert await rows_of(pg_url, tenant) == before
        patient.grace_seconds = 0
        await patient.collect()
    finally:
        await engine.dispose()
    after = await rows_of(pg_url, tenant)
    assert a not in after and b in after and len(after) == 2  # b and c stay
    assert not (data_dir / "blobs" / before[a]).exists() and (data_dir / "blobs" / after[b]).is_file()
    assert not stray_old.exists() and stray_new.exists()  # a young stray may be a commit in progress
    stray_new.unlink()
    usage = (await api.client.get(f"/v1/tenants/{tenant}/usage", headers=api.h)).json()
    assert usage["snapshot_blobs"] == 2

    assert (await api.client.post(f"/v1/sessions/{s['id']}/suspend", headers=api.h)).status_code == 200
    last = (await api.client.get(f"/v1/sessions/{s['id']}", headers=api.h)).json()["state"]["snapshot_id"]
    refused = await api.client.delete(f"/v1/snapshots/{last}", headers=api.h)
    assert refused.status_code == 409  # resuming onto a new sandbox starts from it
    await api.end(s["id"])


@pytest.fixture
def eager_server(pg_url: str, tmp_path: Path) -> Iterator[Server]:
    """A real ``sandlot serve`` (requests truly concurrent) whose collection runs every 50 ms
    with no grace period."""
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": f"{INSTANCE}-gc-{secrets.token_hex(2)}",
        "SANDLOT_DATA_DIR": str(tmp_path / "data"),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_SNAPSHOT_GC_INTERVAL": "0.05",
        "SANDLOT_SNAPSHOT_GC_GRACE_SECONDS": "0",
    }
    with Server(settings, tmp_path / "server.log") as server:
        yield server


async def _round(
    api: Api, sid: str, n: int, previous: str | None, rng: random.Random
) -> tuple[str | None, bytes, bool]:
    """Change some files, checkpoint, and (most rounds) delete the previous checkpoint while
    it is being taken: (the new checkpoint's id or None, the workspace's state it should hold,
    whether the previous one was deleted). Three files change and stay: the next checkpoint
    relies on their contents, which only the checkpoint deleted under it holds; the hot ones
    change every round (garbage each round)."""
    change = f"for i in {n * 3 % 120} {(n * 3 + 1) % 120} {(n * 3 + 2) % 120}; do echo {n}-$i > f$i; done"
    change += f"; for i in 0 1 2 3 4; do echo {n}-$i > hot$i; done; echo {n} > new{n}"
    assert (await api.sh(sid, f"{change}; sleep 0.2"))["exit_code"] == 0  # settled: runtime/listing
    hashes = await state(api, sid)
    taking = asyncio.ensure_future(api.client.post(f"/v1/sessions/{sid}/checkpoints", headers=api.h))
    deleted = False
    if previous is not None and n % 4 != 3:
        await asyncio.sleep(rng.uniform(0.02, 0.25))
        resp = await api.client.delete(f"/v1/snapshots/{previous}", headers=api.h)
        assert resp.status_code == 204, resp.text
        deleted = True
    resp = await taking
    assert resp.status_code in (201, 409), resp.text  # 409: its contents kept being collected
    return (resp.json()["id"] if resp.status_code == 201 else None), hashes, deleted


async def _rounds(api: Api, sid: str, seed: int) -> tuple[dict[str, bytes], int]:
    """The rounds (bounded in number and time): the checkpoints kept (id -> the workspace's
    state), and how many were deleted."""
    rng, acked, previous, deletions = random.Random(seed), dict[str, bytes](), None, 0
    deadline = time.monotonic() + ROUNDS_WITHIN
    for n in range(ROUNDS):
        if time.monotonic() > deadline:
            break
        made, hashes, deleted = await _round(api, sid, n, previous, rng)
        if deleted:
            acked.pop(previous or "", None)
            previous = None
            deletions += 1
        if made is not None:
            acked[made] = hashes
            previous = made
    return acked, deletions


@pytest.mark.timeout(600)
async def test_collection_never_takes_what_a_snapshot_being_taken_needs(
    eager_server: Server, new_tenant: NewTenant, pg_url: str, tmp_path: Path
) -> None:
    async with httpx.AsyncClient(base_url=eager_server.url, timeout=120) as http:
        api = Api(cast(AsyncTestClient, http), await new_tenant())
        env = await api.env(pool_size=0)
        s = await api.session(env["name"])
        make = "i=0; while [ $i -lt 120 ]; do head -c 8192 /dev/urandom > f$i; i=$((i+1)); done"
        assert (await api.sh(s["id"], make))["exit_code"] == 0
        ours, engine = await collector(pg_url, tmp_path / "data" / "blobs", grace=0)
        stop = asyncio.Event()
        ours_gone = 0

        async def collect_all_the_time() -> None:  # beside the server's own, every 50 ms
            nonlocal ours_gone
            while not stop.is_set():
                ours_gone += (await ours.collect()).blobs
                await asyncio.sleep(0.01)

        sweeper = asyncio.ensure_future(collect_all_the_time())
        seed = secrets.randbits(32)
        try:
            acked, deletions = await _rounds(api, s["id"], seed)
        finally:
            stop.set()
            await sweeper
        ours_gone += (await ours.collect()).blobs  # whatever the last deletion left
        await engine.dispose()
        log = (tmp_path / "server.log").read_text(errors="replace")
        # both collectors take what they find first: either may have taken all of it (a run
        # where ours did failed on counting the server's alone: "0 > 0")
        gone = ours_gone + sum(int(n) for n in re.findall(r"snapshot contents collected: (\d+) blobs", log))
        retried = log.count("taking the workspace again")
        print(f"seed {seed}: {len(acked)} kept, {deletions} deleted, {gone} collected, {retried} retried")
        assert len(acked) >= 5 and deletions >= 5 and gone > 0
        tenant = await tenant_id(api)
        rows = await rows_of(pg_url, tenant)
        for key in rows.values():
            assert (tmp_path / "data" / "blobs" / key).is_file(), key
        assert set(rows) == await referenced(pg_url, tenant)  # what deleted snapshots alone held is gone
        for snapshot_id, hashes in acked.items():  # every acknowledged checkpoint, byte for byte
            copy = await api.session(env["name"], snapshot_id=snapshot_id)
            assert await state(api, copy["id"]) == hashes, snapshot_id
            await api.end(copy["id"])
        await api.end(s["id"])


async def test_a_content_collected_under_a_snapshot_being_committed_is_stored_again(
    api: Api, own: Own, pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The race the foreign key guards, made to happen: a snapshot relies on a content of its
    session's previous snapshot (its file unchanged), that snapshot is deleted and the content
    collected before the new one commits. The commit fails, the workspace is taken again
    relying only on contents still there, and the snapshot restores whole."""
    caplog.set_level(logging.INFO, logger="sandlot.services.snapshot_commit")
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    make = "head -c 5000 /dev/urandom > only-here; echo kept > kept; sleep 1"  # settled: runtime/listing
    assert (await api.sh(s["id"], make))["exit_code"] == 0
    first = await checkpoint(api, s["id"])
    only_here = await digest_of(api, s["id"], "only-here")
    assert (await api.sh(s["id"], "echo new > new"))["exit_code"] == 0
    expected = await state(api, s["id"])
    async with make_sessionmaker(own.engine)() as session:
        sess, box = await SessionRepository(session, None).get_with_sandbox(s["id"])
    assert box is not None
    previous = await own.snapshots.latest(s["id"])
    assert previous is not None and previous.id == first["id"]
    taken = await own.capture.take(box, previous)
    assert taken.read == 1  # only "new": "only-here" relies on the previous snapshot's content

    assert (await api.client.delete(f"/v1/snapshots/{first['id']}", headers=api.h)).status_code == 204
    await own.collector.collect()
    assert only_here not in await rows_of(pg_url, await tenant_id(api))  # gone under the snapshot

    row = await own.snapshots._commit.store(sess, box, "checkpoint", previous, taken, "", None)
    assert any("taking the workspace again" in r.getMessage() for r in caplog.records)
    assert only_here in await rows_of(pg_url, await tenant_id(api))  # stored again
    copy = await api.session(env["name"], snapshot_id=row.id)
    assert await state(api, copy["id"]) == expected
    await api.end(copy["id"])
    await api.end(s["id"])
