"""What the benchmarks share: a throw-away PostgreSQL database with a tenant and key, a real
``sandlot serve`` (granian, Docker runtime) on a free loopback port, an aiohttp client, and the
percentile table they print. Everything started here is removed on exit (containers by label)."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiodocker
import aiohttp
import asyncpg

from sandlot.services.accounts import AccountService
from sandlot.store import migrate
from sandlot.store.engine import make_engine, make_sessionmaker

ADMIN = os.environ.get("SANDLOT_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
IMAGE = "sandlot/busybox:latest"


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def header() -> str:
    return (
        f"| {'operation (ms)':<48} | {'p50':>8} | {'p99':>8} | {'mean':>8} | {'n':>5} |\n"
        f"|{'-' * 50}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 7}|"
    )


def row(name: str, samples: list[float]) -> str:
    return (
        f"| {name:<48} | {pct(samples, 0.5):8.2f} | {pct(samples, 0.99):8.2f} | "
        f"{statistics.mean(samples):8.2f} | {len(samples):5d} |"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def call(http: aiohttp.ClientSession, method: str, path: str, body: object = None) -> tuple[int, Any]:
    async with http.request(method, path, json=body) as resp:
        data = await resp.read()
        return resp.status, json.loads(data) if data else None


@dataclass
class Store:
    url: str
    key: str


@asynccontextmanager
async def store() -> AsyncIterator[Store]:
    """A migrated database with one tenant (generous quotas) and its key; dropped on exit."""
    name = f"sandlot_bench_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(ADMIN)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = ADMIN.rpartition("/")[0] + "/" + name
    try:
        await asyncio.to_thread(migrate.upgrade, url)
        engine = make_engine(url)
        accounts = AccountService(make_sessionmaker(engine))
        roomy = {"max_sandboxes": 400, "max_sessions": 400, "max_cpus": 400}
        tenant = await accounts.create_tenant("bench", max_memory_mb=1 << 24, max_disk_mb=1 << 24, **roomy)
        key = (await accounts.create_key(tenant.id)).plaintext
        await engine.dispose()
        yield Store(url, key)
    finally:
        conn = await asyncpg.connect(ADMIN)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


@asynccontextmanager
async def server(
    db: Store, instance: str, env: Mapping[str, str] | None = None
) -> AsyncIterator[aiohttp.ClientSession]:
    """``sandlot serve`` on a free port, and an aiohttp client with the tenant's key.

    aiohttp is the lightest mature asyncio HTTP client here, so the figures show the server,
    not the client (the floor rows of the benchmarks use the same client)."""
    port = free_port()
    # the server's log, kept for a look when a figure surprises (errors, stalls)
    log_file = open(os.environ.get("SANDLOT_BENCH_LOG", os.devnull), "ab")  # noqa: SIM115, ASYNC230 (once, before the run)
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "sandlot",
        "serve",
        env={
            **os.environ,
            "SANDLOT_DATABASE_URL": db.url,
            "SANDLOT_PORT": str(port),
            "SANDLOT_INSTANCE": instance,
            "SANDLOT_RUNTIME": "docker",
            "SANDLOT_DATA_DIR": tempfile.mkdtemp(prefix="sandlot-bench-"),
            "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
            **(env or {}),
        },
        stdout=log_file,
        stderr=log_file,
    )
    log_file.close()  # the child has its own copy
    try:
        async with aiohttp.ClientSession(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {db.key}"},
            timeout=aiohttp.ClientTimeout(total=60),
        ) as http:
            for _ in range(300):
                try:
                    async with http.get("/readyz") as resp:
                        if resp.status == 200:
                            break
                except aiohttp.ClientError:
                    await asyncio.sleep(0.1)
            yield http
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 20)


async def remove_containers(instance: str) -> None:
    docker = aiodocker.Docker()
    try:
        for c in await docker.containers.list(
            all=True, filters={"label": [f"dev.sandlot.instance={instance}"]}
        ):
            await c.delete(force=True)
    finally:
        await docker.close()


async def settle(http: aiohttp.ClientSession, ready: int) -> None:
    """Wait until at least ``ready`` pool sandboxes are ready and none is starting or stopping:
    the figures are steady-state ones."""
    for _ in range(600):
        status, rows = await call(http, "GET", "/v1/sandboxes")
        if status != 200:
            raise RuntimeError(f"listing sandboxes: {status} {rows}")
        n_ready = sum(r["status"] == "ready" for r in rows)
        busy = sum(r["status"] in ("created", "setting_up", "shutting_down") for r in rows)
        if n_ready >= ready and not busy:
            await asyncio.sleep(1.0)
            return
        await asyncio.sleep(0.1)
