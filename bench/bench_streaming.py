"""Streaming throughput and suspend/resume times, in one run, against the raw baseline.

- Output throughput: a background process printing ``head -c 36M /dev/zero | base64`` (~48 MB)
  read live through Sandlot's WebSocket stream, vs reading the same command's output from a
  direct aiodocker ``exec`` attach (the raw Docker stream, no persistence, no resume).
- Suspend and resume of a session whose workspace holds 1,000 files (50 MiB): suspend
  (snapshot + freeze), resume onto the same sandbox, and resume after the container was
  removed (a replacement hydrated from the snapshot).

Usage: ``uv run python bench/bench_streaming.py [--rounds 3]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time

import aiodocker
import websockets
from harness import IMAGE, call, header, remove_containers, row, server, store

INSTANCE = f"bench-stream-{secrets.token_hex(3)}"
COMMAND = "head -c 37748736 /dev/zero | base64"  # 36 MiB in, ~48 MiB out
MAKE_50MIB = (
    "mkdir -p d && i=0; while [ $i -lt 1000 ]; do head -c 52429 /dev/urandom > d/f$i; i=$((i+1)); done"
)


async def ws_throughput(http, base: str, key: str, sid: str) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    _, proc = await call(http, "POST", f"/v1/sessions/{sid}/processes", {"command": COMMAND})
    url = f"ws{base.removeprefix('http')}/v1/sessions/{sid}/processes/{proc['id']}/stream?offset=0"
    got = 0
    t = time.perf_counter()
    async with websockets.connect(
        url, additional_headers={"Authorization": f"Bearer {key}"}, max_size=None
    ) as ws:
        async for message in ws:
            if isinstance(message, str):
                break
            got += len(message)
    return time.perf_counter() - t, got


async def attach_throughput(docker: aiodocker.Docker) -> tuple[float, int]:
    c = await docker.containers.create(
        {
            "Image": IMAGE,
            "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
            "Labels": {"dev.sandlot.instance": INSTANCE},
            "HostConfig": {"NetworkMode": "none"},
        }
    )
    await c.start()
    try:
        exe = await c.exec(["/bin/sh", "-c", COMMAND])
        got = 0
        t = time.perf_counter()
        async with exe.start(detach=False) as stream:
            while (msg := await stream.read_out()) is not None:
                got += len(msg.data)
        return time.perf_counter() - t, got
    finally:
        await c.delete(force=True)


async def main(rounds: int) -> None:
    ws_rates: list[float] = []
    raw_rates: list[float] = []
    suspend: list[float] = []
    reattach: list[float] = []
    hydrate: list[float] = []
    async with store() as db:
        try:
            env = {"SANDLOT_PROCESS_OUTPUT_LIMIT": str(60 << 20)}
            async with server(db, INSTANCE, env) as http:
                base = str(http._base_url).rstrip("/")
                await call(http, "POST", "/v1/environments", {"name": "b", "images": [IMAGE], "pool_size": 0})
                docker = aiodocker.Docker()
                try:
                    for _ in range(rounds):
                        _, s = await call(http, "POST", "/v1/sessions", {"environment": "b"})
                        seconds, n = await ws_throughput(http, base, db.key, s["id"])
                        ws_rates.append(n / seconds / 1e6)
                        seconds, n = await attach_throughput(docker)
                        raw_rates.append(n / seconds / 1e6)

                        run = f"/v1/sessions/{s['id']}/features/shell/run"
                        await call(http, "POST", run, {"command": MAKE_50MIB, "timeout": 600})
                        t = time.perf_counter()
                        status, _ = await call(http, "POST", f"/v1/sessions/{s['id']}/suspend")
                        suspend.append((time.perf_counter() - t) * 1000)
                        assert status == 200
                        t = time.perf_counter()
                        status, body = await call(http, "POST", f"/v1/sessions/{s['id']}/resume")
                        reattach.append((time.perf_counter() - t) * 1000)
                        assert body["how"] == "reattached", body
                        await call(http, "POST", f"/v1/sessions/{s['id']}/suspend")
                        for c in await docker.containers.list(
                            all=True, filters={"label": [f"dev.sandlot.sandbox={s['sandbox_id']}"]}
                        ):
                            await c.delete(force=True)
                        t = time.perf_counter()
                        status, body = await call(http, "POST", f"/v1/sessions/{s['id']}/resume")
                        hydrate.append((time.perf_counter() - t) * 1000)
                        assert body["how"] == "hydrated", body
                        await call(http, "DELETE", f"/v1/sessions/{s['id']}")
                finally:
                    await docker.close()
        finally:
            await remove_containers(INSTANCE)

    print(f"\nStreaming and suspend/resume ({os.cpu_count()} cores, PostgreSQL, Docker runtime)\n")
    print(f"| {'output throughput (MB/s)':<48} | {'median':>8} | {'min':>8} | {'n':>5} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 10}|{'-' * 7}|")
    for name, rates in (
        ("Sandlot WebSocket stream of a background process", ws_rates),
        ("aiodocker exec attach (baseline)", raw_rates),
    ):
        ordered = sorted(rates)
        print(f"| {name:<48} | {ordered[len(ordered) // 2]:8.1f} | {ordered[0]:8.1f} | {len(rates):5d} |")
    print()
    print(header())
    print(row("suspend, 1,000 files / 50 MiB (snapshot + freeze)", suspend))
    print(row("resume onto the same sandbox (reattach)", reattach))
    print(row("resume after the container was removed (hydrate)", hydrate))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args().rounds))
