"""Measuring and reporting for bench_load.py: CPU seconds and RSS from /proc (a process tree,
or every process of a name), the per-N table, the Sandlot/raw ratios and the SVG chart (drawn by
hand: no plotting dependency in this project)."""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

KINDS = ("acquire", "first_command", "command", "file_write", "file_read", "exec", "end")
DOCKER = {"dockerd", "containerd", "containerd-shim"}

# -- /proc -------------------------------------------------------------------------------------


def tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    pids, i = [pid], 0
    while i < len(pids):
        with suppress(OSError):
            for task in os.listdir(f"/proc/{pids[i]}/task"):
                with open(f"/proc/{pids[i]}/task/{task}/children") as f:
                    pids += [int(p) for p in f.read().split()]
        i += 1
    return pids


def comm(pid: str) -> str:
    with suppress(OSError), open(f"/proc/{pid}/comm") as f:
        return f.read().strip()
    return ""


def named(names: set[str]) -> list[int]:
    """Every process whose command name is one of ``names`` (anyone's)."""
    return [int(e) for e in os.listdir("/proc") if e.isdigit() and comm(e) in names]


def cpu_seconds(pids: list[int], fields: slice = slice(11, 15)) -> float:
    """utime + stime of each process and of its reaped children (``fields``: only some)."""
    ticks = 0
    for pid in pids:
        with suppress(OSError), open(f"/proc/{pid}/stat") as f:
            ticks += sum(int(x) for x in f.read().rpartition(")")[2].split()[fields])
    return ticks / os.sysconf("SC_CLK_TCK")


def sandboxes_cpu() -> float:
    """CPU-seconds of every running container's cgroup (cgroup v1 or v2): the commands, the
    shells and our programs in them, whoever reaps them."""
    total = 0
    for root, name, scale in (
        ("/sys/fs/cgroup/cpuacct/docker", "cpuacct.usage", 1e9),
        ("/sys/fs/cgroup/system.slice", "cpu.stat", 1e6),
    ):
        with suppress(OSError):
            for entry in os.listdir(root):
                if root.endswith("docker") and len(entry) != 64:
                    continue
                if not root.endswith("docker") and not entry.startswith("docker-"):
                    continue
                with suppress(OSError), open(f"{root}/{entry}/{name}") as f:
                    text = f.read()
                    total += int(text.split()[1] if name == "cpu.stat" else text) / scale
    return total


def rss_mb(pids: list[int]) -> float:
    kb = 0
    for pid in pids:
        with suppress(OSError), open(f"/proc/{pid}/status") as f:
            kb += sum(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return kb / 1024


def cpu_groups(with_server: bool) -> dict[str, float]:
    engine = named(DOCKER)
    groups = {
        "docker": cpu_seconds(engine),
        # the engine's own time, and what it reaped: runc for every exec, and the shells and
        # commands an exec started once they end (those are the sandboxes' too)
        "engine_self": cpu_seconds(engine, slice(11, 13)),
        "engine_reaped": cpu_seconds(engine, slice(13, 15)),
        "sandboxes": sandboxes_cpu(),
        "postgres": cpu_seconds(named({"postgres"})),
        "client": cpu_seconds([os.getpid()]),
    }
    if with_server:  # the server is this process's only child
        groups["server"] = cpu_seconds(tree(os.getpid())[1:])
    return groups


@asynccontextmanager
async def watch(with_server: bool) -> AsyncIterator[dict[str, float]]:
    """CPU seconds used inside the block, and the server's peak RSS (sampled twice a second)."""
    out: dict[str, float] = {}
    before, peak = cpu_groups(with_server), 0.0
    if with_server:  # with the pool full and its shells open, before any session starts
        out["server_rss_before_mb"] = round(rss_mb(tree(os.getpid())[1:]), 1)

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, rss_mb(tree(os.getpid())[1:]))
            await asyncio.sleep(0.5)

    task = asyncio.create_task(sample()) if with_server else None
    try:
        yield out
    finally:
        if task is not None:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task
            out["server_peak_rss_mb"] = round(max(peak, rss_mb(tree(os.getpid())[1:])), 1)
        after = cpu_groups(with_server)
        out.update({f"cpu_s_{k}": round(after[k] - before[k], 2) for k in after})


# -- figures ---------------------------------------------------------------------------------


def lat(side: dict[str, Any], kind: str, q: str) -> float | None:
    return side["latency_ms"].get(kind, {}).get(q)


def print_run(run: dict[str, Any]) -> None:
    s, r = run["sandlot"], run["raw"]
    print(f"\nN = {run['agents']} agents ({os.cpu_count()} cores: client, server, PostgreSQL, dockerd)\n")
    print(f"| {'operation (ms)':<14} | {'Sandlot p50/p99/max':>26} | {'raw p50/p99/max':>26} |")
    print(f"|{'-' * 16}|{'-' * 28}|{'-' * 28}|")
    for kind in KINDS:
        cells = [
            "/".join(f"{lat(side, kind, q):.1f}" for q in ("p50", "p99", "max"))
            if lat(side, kind, "p50")
            else "-"
            for side in (s, r)
        ]
        print(f"| {kind:<14} | {cells[0]:>26} | {cells[1]:>26} |")
    for name, side in (("Sandlot", s), ("raw", r)):
        print(
            f"{name}: {side['commands_per_s']} commands/s, {side['sessions_per_s']} sessions/s, "
            f"{side['wall_s']} s wall, {side['unfinished_agents']} agents unfinished, "
            f"errors {side['errors'] or 'none'}"
        )
        print(
            "   "
            + ", ".join(f"{k} {v}" for k, v in side.items() if k.startswith(("cpu_", "server_", "pool_")))
        )
    print("Sandlot/raw: " + ", ".join(f"{k} {v}" for k, v in run["ratio"].items()))


def ratios(s: dict[str, Any], r: dict[str, Any]) -> dict[str, float | None]:
    def div(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a and b else None

    return {
        "commands_per_s": div(s["commands_per_s"], r["commands_per_s"]),
        "sessions_per_s": div(s["sessions_per_s"], r["sessions_per_s"]),
        "command_p50": div(lat(s, "command", "p50"), lat(r, "command", "p50")),
    }


def svg_panel(
    x0: int, title: str, log: bool, ns: list[int], series: dict[str, list[float | None]]
) -> list[str]:
    w, h, top, left = 330, 220, 40, 55
    values = [v for vs in series.values() for v in vs if v]
    f = math.log10 if log else float
    lo, hi = (f(min(values)) - 0.2, f(max(values)) + 0.2) if log else (0.0, max(values) * 1.15)

    def x(i: int) -> float:
        return x0 + left + (i + 0.5) * w / len(ns)

    def y(v: float) -> float:
        return top + h - (f(v) - lo) / (hi - lo) * h

    out = [
        f'<rect x="{x0 + left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>',
        f'<text x="{x0 + left + w / 2}" y="{top - 12}" text-anchor="middle">{title}</text>',
    ]
    for i, n in enumerate(ns):
        out.append(f'<text x="{x(i)}" y="{top + h + 18}" text-anchor="middle">N={n}</text>')
    for j in range(5):
        t = lo + (hi - lo) * j / 4
        v = 10**t if log else t
        out.append(
            f'<text x="{x0 + left - 5}" y="{top + h - h * j / 4 + 4}" text-anchor="end">{v:,.0f}</text>'
        )
    for k, (name, vs) in enumerate(series.items()):
        colour = "#1f77b4" if name.startswith("Sandlot") else "#d62728"
        dash = ' stroke-dasharray="5 3"' if "p99" in name else ""
        pts = [(x(i), y(v)) for i, v in enumerate(vs) if v]
        line = " ".join(f"{a:.1f},{b:.1f}" for a, b in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3" fill="{colour}"/>' for a, b in pts]
        ly = top + h + 36 + 16 * k
        out.append(
            f'<line x1="{x0 + left}" y1="{ly - 4}" x2="{x0 + left + 24}" y2="{ly - 4}" '
            f'stroke="{colour}"{dash}/>'
        )
        out.append(f'<text x="{x0 + left + 30}" y="{ly}">{name}</text>')
    return out


def svg_chart(runs: list[dict[str, Any]]) -> str:
    ns = [r["agents"] for r in runs]
    latency = {
        f"{name} {q}": [lat(r[side], "command", q) for r in runs]
        for name, side in (("Sandlot", "sandlot"), ("raw", "raw"))
        for q in ("p50", "p99")
    }
    rate = {
        name: [r[side]["commands_per_s"] for r in runs]
        for name, side in (("Sandlot", "sandlot"), ("raw", "raw"))
    }
    body = svg_panel(0, "shell command latency (ms, log scale)", True, ns, latency)
    body += svg_panel(420, "shell commands / s", False, ns, rate)
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="840" height="360" font-family="sans-serif" '
        'font-size="12">\n<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )
