"""Agent-loop load: N simulated agents at once against a real ``sandlot serve``, and the same
loop on direct aiodocker at the same concurrency, in one run (issue #16).

A Sandlot agent starts a session from a warm pool sized to N (``POST /v1/sessions``; the clock
starts once the pool is full), runs 20 shell commands of mixed size through the session's
persistent shell, writes and reads back a 1 MiB file (``PUT``/``GET /v1/sandboxes/{id}/files``),
runs one one-shot ``shell.exec`` and ends the session. The agents share one tenant whose quotas
are sized to N, each with its own API key (the rate limit is per key, as for N independent
agents). The raw baseline creates N containers beforehand (its "warm pool"), then each agent
runs the same 20 commands as ``docker exec``, a 1 MiB ``put_archive``/``get_archive`` round trip
and one more exec.

Per N it prints throughput, p50/p99/max per operation, errors, the server's peak RSS (and
what it grew by per active session, from its RSS with the pool full before the agents start)
and CPU seconds (its process tree, from /proc) and the CPU of dockerd/containerd/shims, PostgreSQL and
this client (machine-wide figures: whatever else runs here counts too; see load_report.py). It
writes artifacts/bench_load.json and docs/bench-load.svg. Each side of each N stops after
--deadline seconds and reports what finished.

Usage: ``uv run python bench/bench_load.py [--agents 10,50] [--deadline 600] [--workers 1]``
(``--workers``: the server's ``SANDLOT_WORKERS``).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import secrets
import tarfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiodocker
import aiohttp
import asyncpg
from harness import ADMIN, IMAGE, Store, pct, remove_containers, server
from load_report import KINDS, print_run, ratios, svg_chart, watch

from sandlot.services.accounts import AccountService
from sandlot.store import migrate
from sandlot.store.engine import make_engine, make_sessionmaker

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = f"bench-load-{secrets.token_hex(3)}"
COMMANDS = ["echo hi", "ls -la /", "seq 1 2000", "yes 0123456789abcdef | head -c 102400", "sleep 0.05"] * 4
EXEC_ARGV = ["ls", "-la", "/"]
PAYLOAD = os.urandom(1 << 20)


@dataclass
class Record:
    """What one side's agents did: latencies (ms) by operation kind, errors, completed work."""

    lat: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in KINDS})
    errors: Counter[str] = field(default_factory=Counter)
    sessions: int = 0  # counted after an await only: ``x += await ...`` would lose updates
    cold: int = 0

    async def timed(self, kind: str, op: Callable[[], Awaitable[str | None]]) -> bool:
        """Run ``op`` (None on success, else an error label); time it if it succeeded."""
        t = time.perf_counter()
        try:
            err = await op()
        except (aiohttp.ClientError, aiodocker.DockerError, TimeoutError) as exc:
            err = f"{type(exc).__name__} {getattr(exc, 'status', '')}".strip()
        if err is None:
            self.lat[kind].append((time.perf_counter() - t) * 1000)
            return True
        self.errors[f"{kind}: {err}"] += 1
        return False


# -- Sandlot -----------------------------------------------------------------------------------


@asynccontextmanager
async def load_store(n: int) -> AsyncIterator[tuple[Store, list[str]]]:
    """A migrated database with one tenant (quotas sized to ``n``) and ``n`` keys; dropped on exit."""
    name = f"sandlot_bench_{secrets.token_hex(3)}"
    conn = await asyncpg.connect(ADMIN)
    await conn.execute(f'CREATE DATABASE "{name}"')
    await conn.close()
    url = ADMIN.rpartition("/")[0] + "/" + name
    try:
        await asyncio.to_thread(migrate.upgrade, url)
        engine = make_engine(url)
        accounts = AccountService(make_sessionmaker(engine))
        quota = {"max_sandboxes": n + 8, "max_sessions": n + 8, "max_cpus": n + 8}
        tenant = await accounts.create_tenant("load", max_memory_mb=1 << 24, max_disk_mb=1 << 24, **quota)
        keys = [(await accounts.create_key(tenant.id, name=f"agent-{i}")).plaintext for i in range(n)]
        await engine.dispose()
        yield Store(url, keys[0]), keys
    finally:
        conn = await asyncpg.connect(ADMIN)
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def api(http: aiohttp.ClientSession, key: str, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with http.request(method, path, headers={"Authorization": f"Bearer {key}"}, **kw) as resp:
        data = await resp.read()
        is_json = resp.content_type.endswith("json")
    return resp.status, json.loads(data) if is_json and data else data


def problem(status: int, body: Any) -> str:
    code = body.get("code") if isinstance(body, dict) else None
    return f"{status} {code or ''}".strip()


async def shell(http: aiohttp.ClientSession, key: str, path: str, args: dict[str, Any]) -> str | None:
    status, out = await api(http, key, "POST", path, json=args)
    if status != 200:
        return problem(status, out)
    return None if out["exit_code"] == 0 else f"exit {out['exit_code']}"


async def expect(http: aiohttp.ClientSession, key: str, method: str, path: str, **kw: Any) -> str | None:
    status, out = await api(http, key, method, path, **kw)
    if status >= 300:
        return problem(status, out)
    return None if method != "GET" or out == PAYLOAD else "content differs"


async def sandlot_agent(http: aiohttp.ClientSession, key: str, rec: Record, live: set[str]) -> None:
    ids: dict[str, str] = {}

    async def acquire() -> str | None:
        status, body = await api(http, key, "POST", "/v1/sessions", json={"environment": "load"})
        if status != 201:
            return problem(status, body)
        ids.update(session=body["id"], sandbox=body["sandbox_id"])
        live.add(body["id"])
        rec.cold += not body["warm"]
        return None

    if not await rec.timed("acquire", acquire):
        return
    session = f"/v1/sessions/{ids['session']}"
    for i, command in enumerate(COMMANDS):
        kind = "first_command" if i == 0 else "command"
        args = {"command": command}
        await rec.timed(kind, lambda a=args: shell(http, key, f"{session}/features/shell/run", a))
    files, params = f"/v1/sandboxes/{ids['sandbox']}/files", {"path": "load.bin"}
    await rec.timed("file_write", lambda: expect(http, key, "PUT", files, params=params, data=PAYLOAD))
    await rec.timed("file_read", lambda: expect(http, key, "GET", files, params=params))
    await rec.timed("exec", lambda: shell(http, key, f"{session}/features/shell/exec", {"argv": EXEC_ARGV}))
    if await rec.timed("end", lambda: expect(http, key, "DELETE", session)):
        live.discard(ids["session"])
        rec.sessions += 1


async def fill_pool(http: aiohttp.ClientSession, n: int, stop: float) -> int:
    """Wait until ``n`` pool sandboxes are ready and none is starting (or ``stop`` passes)."""
    ready = 0
    while time.monotonic() < stop:
        async with http.get("/v1/sandboxes", params={"limit": 1000}) as resp:
            rows = await resp.json()
        ready = sum(r["status"] == "ready" for r in rows)
        if ready >= n and not any(r["status"] in ("created", "setting_up") for r in rows):
            await asyncio.sleep(1.0)
            break
        await asyncio.sleep(0.5)
    return ready


async def drive(n: int, stop: float, rec: Record, agent: Callable[[int], Awaitable[None]]) -> dict[str, Any]:
    """Run ``n`` agents at once until they finish or ``stop`` passes; cancel the rest."""
    t = time.perf_counter()
    tasks = [asyncio.create_task(agent(i)) for i in range(n)]
    done, pending = await asyncio.wait(tasks, timeout=max(1.0, stop - time.monotonic()))
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    for task in done:
        if task.exception() is not None:
            rec.errors[f"agent: {type(task.exception()).__name__}"] += 1
    return summary(rec, n, time.perf_counter() - t, len(pending))


async def run_sandlot(n: int, deadline: float, workers: int) -> dict[str, Any]:
    rec, instance = Record(), f"{INSTANCE}-s{n}"
    live: set[str] = set()
    stop = time.monotonic() + deadline
    async with load_store(n) as (db, keys):
        try:
            async with server(db, instance, {"SANDLOT_WORKERS": str(workers)}) as setup:
                env = {"name": "load", "images": [IMAGE], "pool_size": [n, n]}
                async with setup.post("/v1/environments", json={**env, "housekeeping_interval_seconds": 2}):
                    pass
                t = time.perf_counter()
                ready = await fill_pool(setup, n, stop)
                fill = {"pool_ready": ready, "pool_fill_s": round(time.perf_counter() - t, 1)}
                async with setup.get("/healthz") as resp:
                    base = str(resp.url.origin())
                http = aiohttp.ClientSession(
                    base_url=base,
                    connector=aiohttp.TCPConnector(limit=0),
                    timeout=aiohttp.ClientTimeout(total=deadline),
                )
                try:
                    async with watch(True) as usage:
                        out = await drive(n, stop, rec, lambda i: sandlot_agent(http, keys[i], rec, live))
                finally:
                    ends = (api(http, keys[0], "DELETE", f"/v1/sessions/{s}") for s in live)
                    await asyncio.gather(*ends, return_exceptions=True)
                    await http.close()
        finally:
            await remove_containers(instance)
    per_session = (usage["server_peak_rss_mb"] - usage["server_rss_before_mb"]) / n
    return {**out, **fill, **usage, "server_rss_per_session_mb": round(per_session, 2)}


# -- raw aiodocker -----------------------------------------------------------------------------


async def raw_exec(container: Any, argv: list[str]) -> str | None:
    exe = await container.exec(argv)
    async with exe.start(detach=False) as stream:
        while await stream.read_out() is not None:
            pass
    code = (await exe.inspect())["ExitCode"]
    return None if code == 0 else f"exit {code}"


async def raw_put(container: Any) -> str | None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("load.bin")
        info.size = len(PAYLOAD)
        tar.addfile(info, io.BytesIO(PAYLOAD))
    await container.put_archive("/tmp", buf.getvalue())
    return None


async def raw_get(container: Any) -> str | None:
    member = (await container.get_archive("/tmp/load.bin")).extractfile("load.bin")
    return None if member is not None and member.read() == PAYLOAD else "content differs"


async def raw_agent(container: Any, rec: Record) -> None:
    for i, command in enumerate(COMMANDS):
        kind = "first_command" if i == 0 else "command"
        await rec.timed(kind, lambda c=command: raw_exec(container, ["sh", "-c", c]))
    await rec.timed("file_write", lambda: raw_put(container))
    await rec.timed("file_read", lambda: raw_get(container))
    await rec.timed("exec", lambda: raw_exec(container, EXEC_ARGV))
    rec.sessions += 1


async def run_raw(n: int, deadline: float) -> dict[str, Any]:
    rec, stop, gate = Record(), time.monotonic() + deadline, asyncio.Semaphore(8)
    docker = aiodocker.Docker()

    async def make() -> Any:
        async with gate:
            c = await docker.containers.create(
                {
                    "Image": IMAGE,
                    "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
                    "Labels": {"dev.sandlot.instance": INSTANCE},
                    "HostConfig": {"NetworkMode": "none", "Init": True},
                }
            )
            await c.start()
            return c

    try:
        containers = await asyncio.wait_for(asyncio.gather(*(make() for _ in range(n))), deadline)
        async with watch(False) as usage:
            out = await drive(n, stop, rec, lambda i: raw_agent(containers[i], rec))
    finally:
        await docker.close()
        await remove_containers(INSTANCE)
    return {**out, **usage}


# -- figures -----------------------------------------------------------------------------------


def summary(rec: Record, n: int, wall: float, unfinished: int) -> dict[str, Any]:
    commands = len(rec.lat["first_command"]) + len(rec.lat["command"])  # the successful ones
    return {
        "agents": n,
        "wall_s": round(wall, 2),
        "unfinished_agents": unfinished,
        "commands": commands,
        "sessions": rec.sessions,
        "commands_per_s": round(commands / wall, 1),
        "sessions_per_s": round(rec.sessions / wall, 2),
        "cold_acquires": rec.cold,
        "latency_ms": {
            k: {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "max": max(v), "n": len(v)}
            for k, v in rec.lat.items()
            if v
        },
        "errors": dict(rec.errors),
    }


async def main(agents: list[int], deadline: float, workers: int) -> None:
    runs: list[dict[str, Any]] = []
    for n in agents:
        sandlot = await run_sandlot(n, deadline, workers)
        raw = await run_raw(n, deadline)
        runs.append({"agents": n, "sandlot": sandlot, "raw": raw, "ratio": ratios(sandlot, raw)})
        print_run(runs[-1])
        (ROOT / "artifacts").mkdir(exist_ok=True)
        meta = {"cores": os.cpu_count(), "image": IMAGE, "deadline_s": deadline, "workers": workers}
        meta["at"] = time.ctime()
        (ROOT / "artifacts" / "bench_load.json").write_text(json.dumps({**meta, "runs": runs}, indent=2))
        (ROOT / "docs" / "bench-load.svg").write_text(svg_chart(runs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--agents", default="10,50", help="comma-separated agent counts (default 10,50)")
    parser.add_argument("--deadline", type=float, default=600, help="seconds each side of each N may take")
    parser.add_argument("--workers", type=int, default=1, help="server worker processes (default 1)")
    args = parser.parse_args()
    asyncio.run(main([int(a) for a in args.agents.split(",")], args.deadline, args.workers))
