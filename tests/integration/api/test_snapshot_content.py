"""Content-addressed snapshots on real Docker and PostgreSQL: contents stored once per tenant,
only changed entries read again, byte-identical round trips with hostile names, tenants kept
apart, snapshots made by older versions, and the quota on what is stored."""

from __future__ import annotations

import io
import json
import secrets
import tarfile
from pathlib import Path

import asyncpg
from litestar.testing import AsyncTestClient
from sqlmodel import col, select

from sandlot.store.engine import make_sessionmaker
from sandlot.store.repositories import SessionRepository
from sandlot.store.tables import Snapshot
from tests.integration.api.conftest import Own, blob_rows, checkpoint, state, tenant_id
from tests.integration.conftest import Api, NewTenant
from tests.support.docker import remove_container

#: Names a tenant may choose: a newline, bytes that are not UTF-8, a long one, spaces.
HOSTILE = r"""
mkdir -p src/deep/er 'sp ace' locked
printf 'line one\n' > "$(printf 'new\nline')"
printf 'latin' > "$(printf 'caf\351')"
printf 'bytes' > "src/$(printf '\377\376')"
printf 'long' > "src/$(head -c 200 /dev/zero | tr '\0' x)"
head -c 70000 /dev/urandom > src/deep/er/blob
cp src/deep/er/blob 'sp ace/same blob'
: > empty
printf '#!/bin/sh\necho hi\n' > run.sh && chmod 755 run.sh
printf 'secret' > locked/mine && chmod 600 locked/mine && chmod 500 locked
ln -s src/deep/er/blob rel-link
ln -s /etc/passwd abs-link
ln -s "$(printf 'nowhere\nat all')" dangling
"""


async def test_a_round_trip_keeps_hostile_names_modes_and_links_byte_for_byte(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    assert (await api.sh(s["id"], HOSTILE))["exit_code"] == 0
    first_state = await state(api, s["id"])
    first = await checkpoint(api, s["id"])  # the sandbox's first snapshot: everything read
    assert "dangling" in first["diff"]["added"] and first["file_count"] == 12

    change = (
        "echo more >> src/deep/er/blob; rm \"$(printf 'new\\nline')\"; chmod 700 run.sh; "
        "printf 'added' > \"$(printf 'tab\\there\\377')\"; rm rel-link; printf 'was a link' > rel-link"
    )
    assert (await api.sh(s["id"], change))["exit_code"] == 0
    second = await checkpoint(api, s["id"])  # only what changed is read
    assert second["diff"]["deleted"] == ["new\nline"]
    assert set(second["diff"]["modified"]) == {"src/deep/er/blob", "run.sh", "rel-link"}
    assert (await api.sh(s["id"], "echo last > empty; cd src"))["exit_code"] == 0
    before = await state(api, s["id"])
    assert (await api.client.post(f"/v1/sessions/{s['id']}/suspend", headers=api.h)).status_code == 200

    await remove_container(s["sandbox_id"])
    resumed = (await api.client.post(f"/v1/sessions/{s['id']}/resume", headers=api.h)).json()
    assert resumed["how"] == "hydrated" and resumed["session"]["sandbox_id"] != s["sandbox_id"]
    assert await state(api, s["id"]) == before
    assert (await api.sh(s["id"], "pwd; cat ../empty"))["stdout"] == "/workspace/src\nlast\n"

    copy = await api.session(env["name"], snapshot_id=first["id"])  # an earlier one, elsewhere
    assert await state(api, copy["id"]) == first_state
    await api.end(copy["id"])
    await api.end(s["id"])


async def test_a_repeated_content_is_stored_once(api: Api, pg_url: str) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    make = "head -c 300000 /dev/urandom > a; cp a b; mkdir d; cp a d/c; head -c 1000 /dev/urandom > other"
    assert (await api.sh(s["id"], make))["exit_code"] == 0
    one = await checkpoint(api, s["id"])
    tenant = await tenant_id(api)
    rows = await blob_rows(pg_url, tenant)
    assert sorted(r["size_bytes"] for r in rows) == [1000, 300000]  # three copies of a: one blob
    two = await checkpoint(api, s["id"])  # nothing changed: nothing new stored
    assert two["diff"] == {"added": [], "modified": [], "deleted": []}
    assert sorted(r["digest"] for r in await blob_rows(pg_url, tenant)) == sorted(r["digest"] for r in rows)
    usage = (await api.client.get(f"/v1/tenants/{tenant}/usage", headers=api.h)).json()
    assert usage["snapshot_bytes"] == 301000 and usage["snapshot_blobs"] == 2
    assert one["size_bytes"] == two["size_bytes"] == 901000  # what each snapshot holds
    await api.end(s["id"])


async def test_only_entries_whose_key_changed_are_read_again(api: Api, own: Own) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    make = "i=0; while [ $i -lt 50 ]; do echo $i > f$i; i=$((i+1)); done; printf AAAA > same"
    make += "; touch -r same stamp"
    assert (await api.sh(s["id"], make + "; sleep 1"))["exit_code"] == 0  # settled: see runtime/listing
    await checkpoint(api, s["id"])
    # the same size and mtime, new content: only the ctime (which the sandbox cannot set) moved
    assert (await api.sh(s["id"], "printf BBBB > same; touch -r stamp same"))["exit_code"] == 0
    async with make_sessionmaker(own.engine)() as session:
        _, box = await SessionRepository(session, None).get_with_sandbox(s["id"])
        previous = (
            await session.scalars(
                select(Snapshot).where(col(Snapshot.session_id) == s["id"]).order_by(col(Snapshot.created_at))
            )
        ).all()[-1]
    assert box is not None
    taken = await own.capture.take(box, previous)
    await own.capture.discard(taken.staged.values())
    assert taken.read == 1 and not taken.through_engine  # 52 entries, one read
    assert len(taken.staged) == 1
    after = await checkpoint(api, s["id"])
    assert after["diff"] == {"added": [], "modified": ["same"], "deleted": []}
    copy = await api.session(env["name"], snapshot_id=after["id"])
    assert (await api.sh(copy["id"], "cat same f49"))["stdout"] == "BBBB49\n"
    await api.end(copy["id"])
    await api.end(s["id"])


async def test_a_file_the_sandbox_user_cannot_read_is_still_kept(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    assert (await api.sh(s["id"], "printf one > w; printf x > other; chmod 200 w"))["exit_code"] == 0
    await checkpoint(api, s["id"])
    assert (await api.sh(s["id"], "printf two >> w; printf y > other"))["exit_code"] == 0
    snap = await checkpoint(api, s["id"])  # read by name fails for w: the whole workspace is read
    assert sorted(snap["diff"]["modified"]) == ["other", "w"]
    copy = await api.session(env["name"], snapshot_id=snap["id"])
    assert (await api.sh(copy["id"], "stat -c %a w; chmod 600 w; cat w other"))["stdout"] == "200\nonetwoy"
    await api.end(copy["id"])
    await api.end(s["id"])


async def test_tenants_never_share_or_reach_each_others_blobs(
    api: Api, new_tenant: NewTenant, pg_url: str, data_dir: Path, own: Own
) -> None:
    other = Api(api.client, await new_tenant())
    same = "head -c 200000 /dev/zero | tr '\\0' s > shared"
    found: dict[str, dict] = {}
    for who in (api, other):
        env = await who.env(pool_size=0)
        s = await who.session(env["name"])
        assert (await who.sh(s["id"], same))["exit_code"] == 0
        found[await tenant_id(who)] = {"snap": await checkpoint(who, s["id"]), "env": env, "session": s}
    (mine, theirs) = list(found)
    rows = {t: await blob_rows(pg_url, t) for t in found}
    assert rows[mine][0]["digest"] == rows[theirs][0]["digest"]  # the same content...
    assert rows[mine][0]["blob_key"] != rows[theirs][0]["blob_key"]  # ...kept twice
    for t, who in ((mine, api), (theirs, other)):
        assert rows[t][0]["blob_key"].startswith(f"cas/{t}/")
        assert (data_dir / "blobs" / rows[t][0]["blob_key"]).is_file()
        usage = (await who.client.get(f"/v1/tenants/{t}/usage", headers=who.h)).json()
        assert usage["snapshot_bytes"] == 200000  # each pays for its own: nothing tells who else has it

    stolen = found[mine]["snap"]["id"]
    for method, path in (("GET", ""), ("GET", "/archive"), ("DELETE", "")):
        resp = await other.client.request(method, f"/v1/snapshots/{stolen}{path}", headers=other.h)
        assert resp.status_code == 404, (method, path)
    resp = await other.client.post(
        "/v1/sessions",
        json={"environment": found[theirs]["env"]["name"], "snapshot_id": stolen},
        headers=other.h,
    )
    assert resp.status_code == 404
    # the other tenant's snapshot goes, and its content with it: mine stays whole
    await other.end(found[theirs]["session"]["id"])
    assert (
        await other.client.delete(f"/v1/snapshots/{found[theirs]['snap']['id']}", headers=other.h)
    ).status_code == 204
    await own.collector.collect()
    assert await blob_rows(pg_url, theirs) == []
    assert not (data_dir / "blobs" / rows[theirs][0]["blob_key"]).exists()
    copy = await api.session(found[mine]["env"]["name"], snapshot_id=stolen)
    assert (await api.sh(copy["id"], "sha256sum shared | cut -c1-64"))["stdout"].strip() == rows[mine][0][
        "digest"
    ]
    await api.end(copy["id"])
    await api.end(found[mine]["session"]["id"])


def legacy_tar() -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in (("old.txt", b"from an older version\n"), ("sub/kept", b"kept\n")):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid, info.mtime = len(data), 0o644, 1000, 1000, 1_700_000_000
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


async def test_snapshots_of_older_versions_still_restore_download_and_diff(
    api: Api, pg_url: str, data_dir: Path
) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    tenant, snap_id, data = await tenant_id(api), f"snp_{secrets.token_hex(8)}", legacy_tar()
    key = f"snapshots/{tenant}/{snap_id}.tar"
    (data_dir / "blobs" / key).parent.mkdir(parents=True, exist_ok=True)
    (data_dir / "blobs" / key).write_bytes(data)
    old_manifest = json.dumps(
        {
            "old.txt": ["file", "x", 22, 420, 1700000000],
            "sub": ["dir"],
            "sub/kept": ["file", "y", 5, 420, 1700000000],
        }
    )
    conn = await asyncpg.connect(pg_url)
    try:  # the row as version 0008 wrote it (storage defaults to 'tar' in the migration)
        await conn.execute(
            "INSERT INTO snapshots (id, tenant_id, session_id, kind, storage, blob_key, size_bytes,"
            " file_count, manifest, diff, shell_state, created_at) VALUES ($1, $2, $3, 'checkpoint', 'tar',"
            " $4, $5, 2, $6, '{}', '', now() - interval '1 minute')",
            snap_id,
            tenant,
            s["id"],
            key,
            len(data),
            old_manifest,
        )
    finally:
        await conn.close()
    archive = await api.client.get(f"/v1/snapshots/{snap_id}/archive", headers=api.h)
    assert archive.status_code == 200 and archive.content == data
    copy = await api.session(env["name"], snapshot_id=snap_id)
    assert (await api.sh(copy["id"], "cat old.txt sub/kept"))["stdout"] == "from an older version\nkept\n"
    await api.end(copy["id"])
    # a new snapshot of the session whose last one is the old kind: diffed against it
    assert (await api.sh(s["id"], "mkdir sub; printf 'kept\\n' > sub/kept; echo new > new.txt"))[
        "exit_code"
    ] == 0
    after = await checkpoint(api, s["id"])
    assert after["parent_id"] == snap_id
    assert after["diff"]["added"] == ["new.txt"] and after["diff"]["deleted"] == ["old.txt"]
    usage = (await api.client.get(f"/v1/tenants/{tenant}/usage", headers=api.h)).json()
    assert usage["snapshot_bytes"] == len(data) + 4 + 5  # the tar, and each new content once
    await api.end(s["id"])


async def test_the_snapshot_quota_counts_each_content_once(
    new_tenant: NewTenant, client: AsyncTestClient
) -> None:
    api = Api(client, await new_tenant(max_snapshot_mb=1))
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    assert (await api.sh(s["id"], "head -c 600000 /dev/urandom > a"))["exit_code"] == 0
    for _ in range(4):  # 2.4 MB of snapshots, 0.6 MB stored: all fit
        await checkpoint(api, s["id"])
    assert (await api.sh(s["id"], "head -c 600000 /dev/urandom > b"))["exit_code"] == 0
    # 0.6 MB in use and 0.6 MB new would be 1.2 MB: refused, its own size counted
    refused = await api.client.post(f"/v1/sessions/{s['id']}/checkpoints", headers=api.h)
    assert refused.status_code == 429 and refused.json()["quota"] == "snapshot_mb"
    assert (await api.sh(s["id"], "rm b"))["exit_code"] == 0
    await checkpoint(api, s["id"])  # nothing new again: it fits
    await api.end(s["id"])
