"""Sandlot vs the raw Docker baseline, in one run, on this machine.

Starts a real ``sandlot serve`` (granian, PostgreSQL, Docker runtime) and prints p50/p99 of:

- acquiring a sandbox: ``POST /v1/sessions`` on a warm pool, vs creating and starting a
  container directly with aiodocker (the cold path every raw setup pays);
- one shell command: ``POST .../features/shell/run`` through the HTTP API, vs a direct
  aiodocker ``exec`` of the same command.

Usage: ``uv run python bench/bench_core.py [--samples 200]`` (needs what scripts/test.sh sets up).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import socket
import statistics
import sys
import tempfile
import time
from typing import Any

import aiodocker
import aiohttp
import asyncpg

from sandlot.services.accounts import AccountService
from sandlot.store import migrate
from sandlot.store.engine import make_engine, make_sessionmaker

ADMIN = os.environ.get("SANDLOT_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
IMAGE = "sandlot/busybox:latest"
INSTANCE = f"bench-{secrets.token_hex(3)}"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def row(name: str, samples: list[float]) -> str:
    return (
        f"| {name:<44} | {pct(samples, 0.5):8.2f} | {pct(samples, 0.99):8.2f} | "
        f"{statistics.mean(samples):8.2f} | {len(samples):5d} |"
    )


async def call(http: aiohttp.ClientSession, method: str, path: str, body: object = None) -> tuple[int, Any]:
    async with http.request(method, path, json=body) as resp:
        data = await resp.read()
        return resp.status, json.loads(data) if data else None


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
            t = time.perf_counter()
            exe = await c.exec(["echo", "hi"])
            async with exe.start(detach=False) as stream:
                while await stream.read_out() is not None:
                    pass
            await exe.inspect()
            out.append((time.perf_counter() - t) * 1000)
    finally:
        await c.delete(force=True)
    return out


async def main(samples: int) -> None:
    name = f"sandlot_bench_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(ADMIN)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = ADMIN.rpartition("/")[0] + "/" + name
    await asyncio.to_thread(migrate.upgrade, url)
    engine = make_engine(url)
    accounts = AccountService(make_sessionmaker(engine))
    tenant = await accounts.create_tenant("bench", max_sandboxes=100, max_memory_mb=1 << 20)
    key = (await accounts.create_key(tenant.id)).plaintext
    await engine.dispose()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sandlot",
        "serve",
        env={
            **os.environ,
            "SANDLOT_DATABASE_URL": url,
            "SANDLOT_PORT": str(port),
            "SANDLOT_INSTANCE": INSTANCE,
            "SANDLOT_RUNTIME": "docker",
            "SANDLOT_DATA_DIR": tempfile.mkdtemp(prefix="sandlot-bench-"),
            "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        },
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    docker = aiodocker.Docker()
    try:
        # aiohttp: the lightest mature asyncio HTTP client here, so the figures show the
        # server, not the client (the floor rows use the same client).
        async with aiohttp.ClientSession(
            base_url=base,
            headers={"Authorization": f"Bearer {key}"},
            timeout=aiohttp.ClientTimeout(total=60),
        ) as http:
            for _ in range(200):
                try:
                    async with http.get("/readyz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            await call(
                http,
                "POST",
                "/v1/environments",
                {"name": "bench", "images": [IMAGE], "pool_size": [4, 8], "housekeeping_interval_seconds": 5},
            )

            async def settle() -> None:
                """Wait until the pool is full and idle: the figures are steady-state ones."""
                for _ in range(600):
                    rows = (await call(http, "GET", "/v1/sandboxes"))[1]
                    ready = sum(r["status"] == "ready" for r in rows)
                    busy = sum(r["status"] in ("created", "setting_up", "shutting_down") for r in rows)
                    if ready >= 4 and not busy:
                        await asyncio.sleep(1.0)
                        return
                    await asyncio.sleep(0.1)

            await settle()
            acquire = []
            for _ in range(max(20, samples // 4)):
                t = time.perf_counter()
                status, body = await call(http, "POST", "/v1/sessions", {"environment": "bench"})
                acquire.append((time.perf_counter() - t) * 1000)
                assert status == 201 and body["warm"], body
                await call(http, "DELETE", f"/v1/sessions/{body['id']}")
                await settle()

            floor = []
            for _ in range(samples):
                t = time.perf_counter()
                await call(http, "GET", "/healthz")
                floor.append((time.perf_counter() - t) * 1000)

            session = (await call(http, "POST", "/v1/sessions", {"environment": "bench"}))[1]
            await settle()
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
            await call(http, "DELETE", f"/v1/sessions/{session['id']}")

        cold = await raw_create(docker, max(20, samples // 4))
        direct = await raw_exec(docker, samples)
    finally:
        server.terminate()
        await asyncio.wait_for(server.wait(), 20)
        for c in await docker.containers.list(
            all=True, filters={"label": [f"dev.sandlot.instance={INSTANCE}"]}
        ):
            await c.delete(force=True)
        await docker.close()
        conn = await asyncpg.connect(ADMIN)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()

    print(f"\nSandlot core benchmark ({os.cpu_count()} cores, PostgreSQL, Docker runtime)\n")
    print(f"| {'operation (ms)':<44} | {'p50':>8} | {'p99':>8} | {'mean':>8} | {'n':>5} |")
    print(f"|{'-' * 46}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 7}|")
    print(row("acquire: Sandlot warm pool (POST /v1/sessions)", acquire))
    print(row("acquire: aiodocker create + start (baseline)", cold))
    print(row("command: Sandlot shell via HTTP API", shell))
    print(row("command: aiodocker exec (baseline)", direct))
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
