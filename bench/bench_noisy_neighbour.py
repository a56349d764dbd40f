"""Noisy neighbour: tenant B's shell latency while tenant A abuses its own sandbox.

Starts a real ``sandlot serve`` (granian, PostgreSQL, Docker runtime). Tenant B holds a
session and times ``POST .../features/shell/run`` of ``true``, one after another: first idle,
then while tenant A runs each abuse in a sandbox with small limits (0.5 CPU, 128 MB, 32 pids,
64 MB disk): a fork bomb, a memory hog, a disk filler, a CPU spinner. Prints B's p50 idle and
under each abuse, and the ratio. The same figures come from ``tests/abuse`` (written to
``artifacts/abuse.json``), which never asserts on them.

Usage: ``uv run python bench/bench_noisy_neighbour.py [--samples 30]``.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import time

import aiohttp
from harness import call, pct, remove_containers, server, store

from sandlot.services.accounts import AccountService
from sandlot.store.engine import make_engine, make_sessionmaker

INSTANCE = f"bench-{secrets.token_hex(3)}"
LIMITS = {"memory_mb": 128, "cpus": 0.5, "pids": 32}
BOMB = (
    "import os, time\nend = time.time() + 30\nwhile time.time() < end:\n    try:\n"
    "        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
)
ABUSES: dict[str, tuple[str, dict[str, object]]] = {
    "fork bomb": ("sandlot/python:3", {"command": ["python3", "-c", BOMB], "timeout": 12}),
    "memory hog": (
        "sandlot/python:3",
        {"command": ["python3", "-c", "b = []\nwhile 1: b.append(bytearray(8 << 20))"], "timeout": 12},
    ),
    "disk filler": (
        "sandlot/busybox:latest",
        {
            "command": "while :; do dd if=/dev/zero of=/workspace/f bs=1M count=100 2>/dev/null; "
            "rm -f /workspace/f; done",
            "timeout": 12,
        },
    ),
    "cpu spinner": (
        "sandlot/busybox:latest",
        {"command": "for i in 1 2 3 4; do (while :; do :; done) & done; wait", "timeout": 12},
    ),
}


async def p50(http: aiohttp.ClientSession, run: str, samples: int) -> float:
    took = []
    for _ in range(samples):
        t = time.perf_counter()
        status, _ = await call(http, "POST", run, {"command": "true"})
        took.append((time.perf_counter() - t) * 1000)
        assert status == 200
    return pct(took, 0.5)


async def second_key(url: str) -> str:
    engine = make_engine(url)
    accounts = AccountService(make_sessionmaker(engine))
    tenant = await accounts.create_tenant("bench-b")
    key = (await accounts.create_key(tenant.id)).plaintext
    await engine.dispose()
    return key


async def abuse(a: aiohttp.ClientSession, b: aiohttp.ClientSession, run: str, samples: int) -> None:
    print(f"| {'B shell.run p50 (ms)':<14} | {'idle':>7} | {'abused':>7} | {'ratio':>6} |")
    print(f"|{'-' * 16}|{'-' * 9}|{'-' * 9}|{'-' * 8}|")
    for name, (image, body) in ABUSES.items():
        disk = 64 if "busybox" in image else 1024
        _, box = await call(a, "POST", "/v1/sandboxes", {"image": image, **LIMITS, "disk_mb": disk})
        try:
            idle = await p50(b, run, samples)
            task = asyncio.ensure_future(call(a, "POST", f"/v1/sandboxes/{box['id']}/exec", body))
            await asyncio.sleep(1)
            busy = await p50(b, run, samples)
            await task
            print(f"| {name:<14} | {idle:7.2f} | {busy:7.2f} | {busy / idle:6.2f} |")
        finally:
            await call(a, "DELETE", f"/v1/sandboxes/{box['id']}")


async def main(samples: int) -> None:
    async with store() as db:
        try:
            async with server(db, INSTANCE) as a:
                headers = {"Authorization": f"Bearer {await second_key(db.url)}"}
                async with aiohttp.ClientSession(base_url=a._base_url, headers=headers) as b:
                    await call(
                        b, "POST", "/v1/environments", {"name": "nb", "images": ["sandlot/busybox:latest"]}
                    )
                    _, session = await call(b, "POST", "/v1/sessions", {"environment": "nb"})
                    run = f"/v1/sessions/{session['id']}/features/shell/run"
                    await p50(b, run, 3)
                    await abuse(a, b, run, samples)
                    await call(b, "DELETE", f"/v1/sessions/{session['id']}")
        finally:
            await remove_containers(INSTANCE)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=30)
    asyncio.run(main(parser.parse_args().samples))
