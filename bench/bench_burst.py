"""A burst of warm acquires: N sessions started at once from a warm pool of N.

Starts a real ``sandlot serve`` (granian, PostgreSQL, Docker runtime), fills an environment's
pool to N, then starts N sessions at once (``POST /v1/sessions``) and, once all are in, runs
each session's first shell command at once. Repeated for ``--rounds`` rounds (the pool refills
between them), with the pool's shells opened while it waits (the default) and, on a second
server, without (``SANDLOT_POOL_WARM_SHELLS=false``: each first command opens its shell). The raw
baseline, in the same run: N containers created and started at once with aiodocker (what a setup
without a warm pool pays for a burst).

Usage: ``uv run python bench/bench_burst.py [--n 50] [--rounds 3] [--workers 1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time

import aiodocker
import aiohttp
from harness import IMAGE, call, header, pct, remove_containers, row, server, settle, store

INSTANCE = f"bench-{secrets.token_hex(3)}"


async def timed(
    http: aiohttp.ClientSession, method: str, path: str, body: object = None
) -> tuple[float, dict]:
    t = time.perf_counter()
    status, data = await call(http, method, path, body)
    elapsed = (time.perf_counter() - t) * 1000
    assert status in (200, 201), (status, data)
    return elapsed, data


async def raw_burst(docker: aiodocker.Docker, n: int) -> list[float]:
    async def one() -> float:
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
        return (time.perf_counter() - t) * 1000

    return list(await asyncio.gather(*(one() for _ in range(n))))


async def burst(n: int, rounds: int, workers: int, warm_shells: bool) -> tuple[list[float], list[float]]:
    acquire: list[float] = []
    first: list[float] = []
    async with store() as db:
        env = {"SANDLOT_WORKERS": str(workers), "SANDLOT_POOL_WARM_SHELLS": str(warm_shells).lower()}
        async with server(db, INSTANCE, env) as http:
            body = {"name": "burst", "images": [IMAGE], "pool_size": [n, n]}
            await call(http, "POST", "/v1/environments", {**body, "housekeeping_interval_seconds": 1})
            for _ in range(rounds):
                await settle(http, n)
                await asyncio.sleep(2)  # the pool's shells open in the background
                started = await asyncio.gather(
                    *(timed(http, "POST", "/v1/sessions", {"environment": "burst"}) for _ in range(n))
                )
                acquire += [ms for ms, _ in started]
                print(f"round: acquire p50 {pct([ms for ms, _ in started], 0.5):.0f} ms", flush=True)
                assert all(s["warm"] for _, s in started), "a session was not warm"
                ids = [s["id"] for _, s in started]
                hi = {"command": "echo hi"}
                ran = await asyncio.gather(
                    *(timed(http, "POST", f"/v1/sessions/{i}/features/shell/run", hi) for i in ids)
                )
                first += [ms for ms, _ in ran]
                await asyncio.gather(*(call(http, "DELETE", f"/v1/sessions/{i}") for i in ids))
    await remove_containers(INSTANCE)
    return acquire, first


async def main(n: int, rounds: int, workers: int) -> None:
    try:
        acquire, first = await burst(n, rounds, workers, warm_shells=True)
        cold_acquire, cold_first = await burst(n, rounds, workers, warm_shells=False)
        docker = aiodocker.Docker()
        try:
            raw = await raw_burst(docker, n)
        finally:
            await docker.close()
    finally:
        await remove_containers(INSTANCE)

    print(f"\nBurst of {n} warm acquires, {rounds} rounds ({os.cpu_count()} cores, {workers} worker(s))\n")
    print(header())
    print(row(f"acquire: {n} x POST /v1/sessions at once", acquire))
    print(row("first shell command of each, at once", first))
    print(row("acquire, pool shells not opened ahead", cold_acquire))
    print(row("first command, pool shells not opened ahead", cold_first))
    print(row(f"baseline: {n} aiodocker create + start at once", raw))
    print(f"\nwarm burst p50 {pct(acquire, 0.5):.0f} ms vs raw {pct(raw, 0.5):.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=1)
    a = parser.parse_args()
    asyncio.run(main(a.n, a.rounds, a.workers))
