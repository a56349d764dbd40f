"""Sandlot vs the raw Docker baseline, in one run, on this machine.

Starts a real ``sandlot serve`` (granian, PostgreSQL, Docker runtime) and prints p50/p99 of:

- acquiring a sandbox: ``POST /v1/sessions`` on a warm pool, vs creating and starting a
  container directly with aiodocker (the cold path every raw setup pays); each acquire comes
  after a second of idling (the pool settles between them), and a second row has acquires
  back to back from a larger pool: on this VM a process that slept pays to wake up, and an
  acquire wakes a chain of them (client, server, PostgreSQL) five or six times;
- one shell command: ``POST .../features/shell/run`` through the HTTP API, vs a direct
  aiodocker ``exec`` of the same command;
- one one-shot command: ``POST .../features/shell/exec`` (a fresh process, what the Agents SDK
  provider uses; it runs from the session's launcher shell, which the session's first one-shot
  opens with a ``docker exec``), vs the same direct aiodocker ``exec``, and vs the exec Sandlot
  made for it before the launcher, sent directly into the session's own sandbox (the same user
  and pid-reporting wrapper, the same container configuration), alternating with the API
  calls; and the first one-shot of each of a few new sessions (the one that opens it).

Usage: ``uv run python bench/bench_core.py [--samples 200]`` (needs what scripts/test.sh sets up).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time
from typing import Any

import aiodocker
from harness import IMAGE, call, header, pct, remove_containers, row, server, settle, store

from sandlot.runtime.scripts import REPORT_PID_AND_EXEC

INSTANCE = f"bench-{secrets.token_hex(3)}"


async def raw_create(docker: aiodocker.Docker, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        c = await docker.containers.create(
            {
                "Image": IMAGE,
                "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
                "Labels": {"dev.sandlot.instance": INSTANCE},
                "HostConfig": {"NetworkMode": "none", "Init": True},
            }
        )
        await c.start()
        out.append((time.perf_counter() - t) * 1000)
        await c.delete(force=True)
    return out


async def exec_once(c: Any, argv: list[str], user: str = "") -> float:
    """One ``docker exec`` of ``argv`` run to completion and its exit code read, in ms."""
    t = time.perf_counter()
    exe = await c.exec(argv, user=user)
    async with exe.start(detach=False) as stream:
        while await stream.read_out() is not None:
            pass
    await exe.inspect()
    return (time.perf_counter() - t) * 1000


async def one_shots(http: Any, session: dict[str, Any], n: int) -> tuple[list[float], list[float]]:
    """``shell.exec`` of ``echo hi`` through the API, alternating with the exec it makes sent
    straight into the session's sandbox container."""
    docker = aiodocker.Docker()
    try:
        label = f"dev.sandlot.sandbox={session['sandbox_id']}"
        box = (await docker.containers.list(filters={"label": [label]}))[0]
        user = (await box.show())["Config"]["User"]
        wrapped = ["/bin/sh", "-c", REPORT_PID_AND_EXEC, "sh", "", "echo", "hi"]
        api, same = [], []
        path = f"/v1/sessions/{session['id']}/features/shell/exec"
        for _ in range(n):
            t = time.perf_counter()
            _, body = await call(http, "POST", path, {"argv": ["echo", "hi"]})
            api.append((time.perf_counter() - t) * 1000)
            assert body["stdout"] == "hi\n", body
            same.append(await exec_once(box, wrapped, user))
        return api, same
    finally:
        await docker.close()


async def first_one_shots(http: Any, n: int) -> list[float]:
    """The first ``shell.exec`` of each of ``n`` new sessions (on the warm pool)."""
    out = []
    for _ in range(n):
        await settle(http, 4)
        _, session = await call(http, "POST", "/v1/sessions", {"environment": "bench"})
        t = time.perf_counter()
        _, body = await call(
            http, "POST", f"/v1/sessions/{session['id']}/features/shell/exec", {"argv": ["true"]}
        )
        out.append((time.perf_counter() - t) * 1000)
        assert body["exit_code"] == 0, body
        await call(http, "DELETE", f"/v1/sessions/{session['id']}")
    return out


async def raw_exec(docker: aiodocker.Docker, n: int) -> list[float]:
    c = await docker.containers.create(
        {
            "Image": IMAGE,
            "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
            "Labels": {"dev.sandlot.instance": INSTANCE},
            "HostConfig": {"NetworkMode": "none"},
        }
    )
    await c.start()
    out = []
    try:
        for _ in range(n):
            out.append(await exec_once(c, ["echo", "hi"]))
    finally:
        await c.delete(force=True)
    return out


async def main(samples: int) -> None:
    async with store() as db:
        try:
            async with server(db, INSTANCE) as http:
                await call(
                    http,
                    "POST",
                    "/v1/environments",
                    {
                        "name": "bench",
                        "images": [IMAGE],
                        "pool_size": [4, 8],
                        "housekeeping_interval_seconds": 5,
                    },
                )
                await settle(http, 4)
                acquire = []
                for _ in range(max(20, samples // 4)):
                    t = time.perf_counter()
                    status, body = await call(http, "POST", "/v1/sessions", {"environment": "bench"})
                    acquire.append((time.perf_counter() - t) * 1000)
                    assert status == 201 and body["warm"], body
                    await call(http, "DELETE", f"/v1/sessions/{body['id']}")
                    await settle(http, 4)

                await call(
                    http,
                    "POST",
                    "/v1/environments",
                    {"name": "busy", "images": [IMAGE], "pool_size": [12, 12]},
                )
                await settle(http, 12 + 4)
                busy: list[float] = []
                started: list[str] = []
                for _ in range(12):
                    t = time.perf_counter()
                    status, body = await call(http, "POST", "/v1/sessions", {"environment": "busy"})
                    busy.append((time.perf_counter() - t) * 1000)
                    assert status == 201 and body["warm"], body
                    started.append(body["id"])
                for sid in started:
                    await call(http, "DELETE", f"/v1/sessions/{sid}")
                await call(http, "DELETE", "/v1/environments/busy")

                floor = []
                for _ in range(samples):
                    t = time.perf_counter()
                    await call(http, "GET", "/healthz")
                    floor.append((time.perf_counter() - t) * 1000)

                session = (await call(http, "POST", "/v1/sessions", {"environment": "bench"}))[1]
                await settle(http, 3)
                lookup = []
                for _ in range(samples):
                    t = time.perf_counter()
                    await call(http, "GET", f"/v1/sessions/{session['id']}")
                    lookup.append((time.perf_counter() - t) * 1000)
                run = f"/v1/sessions/{session['id']}/features/shell/run"
                for _ in range(20):  # warm up the shell and connections
                    await call(http, "POST", run, {"command": "echo hi"})
                shell = []
                for _ in range(samples):
                    t = time.perf_counter()
                    _, body = await call(http, "POST", run, {"command": "echo hi"})
                    shell.append((time.perf_counter() - t) * 1000)
                    assert body["stdout"] == "hi\n", body
                one_shot, same_box = await one_shots(http, session, max(20, samples // 4))
                await call(http, "DELETE", f"/v1/sessions/{session['id']}")
                first_shot = await first_one_shots(http, 10)

            docker = aiodocker.Docker()
            try:
                cold = await raw_create(docker, max(20, samples // 4))
                direct = await raw_exec(docker, samples)
            finally:
                await docker.close()
        finally:
            await remove_containers(INSTANCE)

    print(f"\nSandlot core benchmark ({os.cpu_count()} cores, PostgreSQL, Docker runtime)\n")
    print(header())
    print(row("acquire: Sandlot warm pool (POST /v1/sessions)", acquire))
    print(row("acquire: back to back (no idle second before)", busy))
    print(row("acquire: aiodocker create + start (baseline)", cold))
    print(row("command: Sandlot shell via HTTP API", shell))
    print(row("command: aiodocker exec (baseline)", direct))
    print(row("one-shot: Sandlot shell.exec via HTTP API", one_shot))
    print(row("one-shot: its exec, sent directly into the sandbox", same_box))
    print(row("one-shot: the first of a session (opens its launcher)", first_shot))
    print(row("floor: GET /healthz (HTTP only)", floor))
    print(row("floor: GET /v1/sessions/{id} (auth + one read)", lookup))
    print(
        f"\nwarm acquire is {pct(cold, 0.5) / pct(acquire, 0.5):.1f}x faster at p50; "
        f"a shell command is {pct(direct, 0.5) / pct(shell, 0.5):.1f}x faster at p50"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=200)
    asyncio.run(main(parser.parse_args().samples))
