"""Snapshot costs for a workspace of 1,000 files / 50 MiB, against the raw engine in the same run.

Sandlot (a real ``sandlot serve``, PostgreSQL, Docker):

- first suspend: the workspace's first snapshot (every file read and stored) + freeze;
- second suspend: after resuming onto the same sandbox and changing one file (only that file
  is read; nothing else is stored again);
- hydrate: a new session started from the snapshot on a warm pool sandbox (the restore alone:
  the files are streamed from the store into an empty workspace);
- resume after the container was removed: a new container is created, then hydrated.

Raw baseline, same tree: aiodocker ``get_archive`` of the workspace (read the tar out) and
``put_archive`` of that tar into a fresh container (as root, no checks, nothing stored).

Usage: ``uv run python bench/bench_snapshots.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time

import aiodocker
from harness import IMAGE, call, header, remove_containers, row, server, settle, store

INSTANCE = f"bench-snap-{secrets.token_hex(3)}"
MAKE_50MIB = (
    "mkdir -p d && i=0; while [ $i -lt 1000 ]; do head -c 52429 /dev/urandom > d/f$i; i=$((i+1)); done"
)
HASHES = "cd /workspace && find . -type f | sort | xargs sha256sum | sha256sum"


async def raw_baseline(docker: aiodocker.Docker, sandbox_id: str) -> tuple[float, float]:
    """(get_archive of the session's workspace, put_archive of it into a fresh container), ms."""
    found = await docker.containers.list(filters={"label": [f"dev.sandlot.sandbox={sandbox_id}"]})
    t = time.perf_counter()
    async with docker._query(
        f"containers/{found[0].id}/archive", method="GET", params={"path": "/workspace"}
    ) as resp:
        tar = await resp.read()
    got = (time.perf_counter() - t) * 1000
    fresh = await docker.containers.create(
        {
            "Image": IMAGE,
            "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
            "Labels": {"dev.sandlot.instance": INSTANCE},
            "HostConfig": {"NetworkMode": "none"},
        }
    )
    try:
        await fresh.start()
        t = time.perf_counter()
        async with docker._query(
            f"containers/{fresh.id}/archive",
            method="PUT",
            params={"path": "/tmp"},
            data=tar,
            headers={"Content-Type": "application/x-tar"},
        ):
            pass
        put = (time.perf_counter() - t) * 1000
    finally:
        await fresh.delete(force=True)
    return got, put


async def timed(http, method: str, path: str, body: object = None) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    status, out = await call(http, method, path, body)
    assert status in (200, 201), (status, out)
    return (time.perf_counter() - t) * 1000, out


async def one_round(http, docker: aiodocker.Docker, figures: dict[str, list[float]]) -> None:  # type: ignore[no-untyped-def]
    _, s = await call(http, "POST", "/v1/sessions", {"environment": "b"})
    sid = s["id"]
    run = f"/v1/sessions/{sid}/features/shell/run"
    await call(http, "POST", run, {"command": MAKE_50MIB, "timeout": 600})
    get, put = await raw_baseline(docker, s["sandbox_id"])
    figures["raw get_archive of the workspace (baseline)"].append(get)
    figures["raw put_archive into a fresh container (baseline)"].append(put)
    ms, _ = await timed(http, "POST", f"/v1/sessions/{sid}/suspend")
    figures["first suspend (snapshot + freeze)"].append(ms)
    ms, body = await timed(http, "POST", f"/v1/sessions/{sid}/resume")
    assert body["how"] == "reattached", body  # type: ignore[index]
    await call(http, "POST", run, {"command": "echo changed >> d/f7"})
    expected = (await call(http, "POST", run, {"command": HASHES}))[1]["stdout"]
    ms, body = await timed(http, "POST", f"/v1/sessions/{sid}/suspend")
    figures["second suspend, one file changed"].append(ms)
    snapshot_id = body["state"]["snapshot_id"]  # type: ignore[index]
    ms, started = await timed(http, "POST", "/v1/sessions", {"environment": "b", "snapshot_id": snapshot_id})
    figures["hydrate: new session from it on a warm sandbox"].append(ms)
    copy = started["id"]  # type: ignore[index]
    got = (await call(http, "POST", f"/v1/sessions/{copy}/features/shell/run", {"command": HASHES}))[1]
    assert got["stdout"] == expected, "the hydrated workspace differs"
    await call(http, "DELETE", f"/v1/sessions/{copy}")
    label = f"dev.sandlot.sandbox={s['sandbox_id']}"
    for c in await docker.containers.list(all=True, filters={"label": [label]}):
        await c.delete(force=True)
    ms, body = await timed(http, "POST", f"/v1/sessions/{sid}/resume")
    assert body["how"] == "hydrated", body  # type: ignore[index]
    figures["resume after the container was removed (create + hydrate)"].append(ms)
    await call(http, "DELETE", f"/v1/sessions/{sid}")


async def main(rounds: int) -> None:
    names = [
        "raw get_archive of the workspace (baseline)",
        "first suspend (snapshot + freeze)",
        "second suspend, one file changed",
        "raw put_archive into a fresh container (baseline)",
        "hydrate: new session from it on a warm sandbox",
        "resume after the container was removed (create + hydrate)",
    ]
    figures: dict[str, list[float]] = {name: [] for name in names}
    async with store() as db:
        try:
            async with server(db, INSTANCE) as http:
                body = {"name": "b", "images": [IMAGE], "pool_size": [2, 4]}
                await call(http, "POST", "/v1/environments", body)
                await settle(http, 2)
                docker = aiodocker.Docker()
                try:
                    for _ in range(rounds):
                        await one_round(http, docker, figures)
                        await settle(http, 2)
                finally:
                    await docker.close()
        finally:
            await remove_containers(INSTANCE)
    print(f"\nSnapshots of 1,000 files / 50 MiB ({os.cpu_count()} cores, PostgreSQL, Docker runtime)\n")
    print(header())
    for name in names:
        print(row(name, figures[name]))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
