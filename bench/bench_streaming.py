"""Streaming throughput and suspend/resume times, in one run, against the raw baseline.

- Output throughput: a background process printing ``head -c 36M /dev/zero | base64`` (~51 MB)
  read live through Sandlot's WebSocket stream, vs reading the same command's output from a
  direct aiodocker ``exec`` attach (the raw Docker stream, no persistence, no resume). Where
  the time goes: the CPU-seconds each stream cost, by side (in the sandbox, from its container's
  cgroup; the engine: dockerd, containerd and the shims; the server; this client).
- Suspend and resume of a session whose workspace holds 1,000 files (50 MiB): suspend
  (snapshot + freeze), resume onto the same sandbox, and resume after the container was
  removed (a replacement hydrated from the snapshot).

Usage: ``uv run python bench/bench_streaming.py [--rounds 3] [--image sandlot/busybox:latest]
[--no-relay]``. By default the reader is served by the API process that started the process,
which gets its output relayed live (no follower in the sandbox); ``--no-relay``
(``SANDLOT_PROCESS_LIVE_RELAY=false``) measures what a reader served by any other API process
gets: the stored output followed in the sandbox (the image decides the follower: busybox copies
with ``dd`` every 20 ms, Debian images follow with GNU ``tail -f``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import secrets
import statistics
import time
from collections.abc import Iterator

import aiodocker
import websockets
from harness import IMAGE, call, header, remove_containers, row, server, store
from load_report import cpu_groups, cpu_seconds, named

INSTANCE = f"bench-stream-{secrets.token_hex(3)}"
COMMAND = "head -c 37748736 /dev/zero | base64"  # 36 MiB in, ~48 MiB out
MAKE_50MIB = (
    "mkdir -p d && i=0; while [ $i -lt 1000 ]; do head -c 52429 /dev/urandom > d/f$i; i=$((i+1)); done"
)


def container_cpu(cid: str) -> float:
    """CPU-seconds used so far by the container's processes, execs included (cgroup v1 or v2)."""
    with contextlib.suppress(OSError), open(f"/sys/fs/cgroup/cpuacct/docker/{cid}/cpuacct.usage") as f:
        return int(f.read()) / 1e9
    with contextlib.suppress(OSError), open(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/cpu.stat") as f:
        return int(f.readline().split()[1]) / 1e6
    return math.nan


def engine_cpu(cid: str) -> float:
    """dockerd's, containerd's and this container's shim's own CPU-seconds (other containers'
    shims come and go with their containers, and take their CPU time with them). Not what they
    reaped: a shim reaps the processes of its execs, whose CPU is the sandbox's already."""
    shims = [p for p in named({"containerd-shim"}) if cid in cmdline(p)]
    return cpu_seconds(named({"dockerd", "containerd"}) + shims, slice(11, 13))


def cmdline(pid: int) -> str:
    with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline") as f:
        return f.read()
    return ""


@contextlib.contextmanager
def cpu_used(cid: str, into: dict[str, list[float]]) -> Iterator[None]:
    """Appends the CPU-seconds the block cost to ``into``, by side."""
    before = {**cpu_groups(with_server=True), "sandbox": container_cpu(cid), "docker": engine_cpu(cid)}
    yield
    after = {**cpu_groups(with_server=True), "sandbox": container_cpu(cid), "docker": engine_cpu(cid)}
    for side in ("sandbox", "docker", "server", "client"):
        into.setdefault(side, []).append(after[side] - before[side])


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


async def attach_throughput(
    docker: aiodocker.Docker, image: str, cpu: dict[str, list[float]]
) -> tuple[float, int]:
    c = await docker.containers.create(
        {
            "Image": image,
            "Cmd": ["/bin/sh", "-c", "while :; do sleep 3600; done"],
            "Labels": {"dev.sandlot.instance": INSTANCE},
            "HostConfig": {"NetworkMode": "none"},
        }
    )
    await c.start()
    try:
        got = 0
        with cpu_used(c.id, cpu):
            exe = await c.exec(["/bin/sh", "-c", COMMAND])
            t = time.perf_counter()
            async with exe.start(detach=False) as stream:
                while (msg := await stream.read_out()) is not None:
                    got += len(msg.data)
            seconds = time.perf_counter() - t
        return seconds, got
    finally:
        await c.delete(force=True)


async def main(rounds: int, image: str, relay: bool) -> None:
    ws_rates: list[float] = []
    raw_rates: list[float] = []
    suspend: list[float] = []
    reattach: list[float] = []
    hydrate: list[float] = []
    ws_cpu: dict[str, list[float]] = {}
    raw_cpu: dict[str, list[float]] = {}
    async with store() as db:
        try:
            env = {"SANDLOT_PROCESS_OUTPUT_LIMIT": str(60 << 20)}
            env["SANDLOT_PROCESS_LIVE_RELAY"] = str(relay).lower()
            async with server(db, INSTANCE, env) as http:
                base = str(http._base_url).rstrip("/")
                await call(http, "POST", "/v1/environments", {"name": "b", "images": [image], "pool_size": 0})
                docker = aiodocker.Docker()
                try:
                    for _ in range(rounds):
                        _, s = await call(http, "POST", "/v1/sessions", {"environment": "b"})
                        boxes = await docker.containers.list(
                            filters={"label": [f"dev.sandlot.sandbox={s['sandbox_id']}"]}
                        )
                        with cpu_used(boxes[0].id, ws_cpu):
                            seconds, n = await ws_throughput(http, base, db.key, s["id"])
                        ws_rates.append(n / seconds / 1e6)
                        seconds, n = await attach_throughput(docker, image, raw_cpu)
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

    how = "relayed live to the API process that started it" if relay else "followed in the sandbox"
    print(f"\nStreaming and suspend/resume ({os.cpu_count()} cores, PostgreSQL, Docker runtime, {image})")
    print(f"(the output {how})\n")
    print(f"| {'output throughput (MB/s)':<48} | {'median':>8} | {'min':>8} | {'n':>5} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 10}|{'-' * 7}|")
    for name, rates in (
        ("Sandlot WebSocket stream of a background process", ws_rates),
        ("aiodocker exec attach (baseline)", raw_rates),
    ):
        ordered = sorted(rates)
        print(f"| {name:<48} | {ordered[len(ordered) // 2]:8.1f} | {ordered[0]:8.1f} | {len(rates):5d} |")
    ratios = sorted(w / r for w, r in zip(ws_rates, raw_rates, strict=True))
    print(f"\nSandlot / raw, round by round: median {ratios[len(ratios) // 2]:.2f}x, {ratios}")
    sides = ("sandbox", "docker", "server", "client")
    names = " | ".join(f"{k if k != 'docker' else 'engine':>8}" for k in sides)
    print(f"\n| {'CPU-seconds per stream (median)':<48} | {names} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 10}|")
    for name, cpu in (("Sandlot WebSocket stream", ws_cpu), ("aiodocker exec attach", raw_cpu)):
        cells = " | ".join(f"{statistics.median(cpu[k]):8.2f}" for k in sides)
        print(f"| {name:<48} | {cells} |")
    print()
    print(header())
    print(row("suspend, 1,000 files / 50 MiB (snapshot + freeze)", suspend))
    print(row("resume onto the same sandbox (reattach)", reattach))
    print(row("resume after the container was removed (hydrate)", hydrate))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--image", default=IMAGE)
    parser.add_argument("--no-relay", dest="relay", action="store_false")
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.image, args.relay))
