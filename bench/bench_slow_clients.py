"""Slow clients: a tenant's ``/healthz`` and sandbox commands while 2,000 connections hang.

Starts a real ``sandlot serve`` (granian, PostgreSQL, Docker runtime, default settings). The
tenant times ``GET /healthz`` and ``POST /v1/sandboxes/{id}/exec`` of ``true``, one after the
other: first idle, then while 2,000 connections from another loopback address (127.0.0.5) hang:
half sent a POST's headers and one byte of a 1,000-byte body, half only part of their headers.
The held phase lasts less than the read timeouts (10 s), so every one of them is still open (or
was refused at once: past ``SANDLOT_CLIENT_MAX_OPEN`` an address is answered 429). Prints p50
and p99 of each phase and the ratio of the p50s.

Usage: ``uv run python bench/bench_slow_clients.py [--held 2000] [--samples 100]``.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import socket
import time

import aiohttp
from harness import call, header, pct, remove_containers, row, server, store

INSTANCE = f"bench-{secrets.token_hex(3)}"
SLOW = "127.0.0.5"
BODY = b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
BODY += b"Content-Length: 1000\r\n\r\n{"
HEADERS = b"POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Len"


async def hold(port: int, request: bytes) -> socket.socket:
    sock = socket.socket()
    sock.setblocking(False)
    sock.bind((SLOW, 0))
    loop = asyncio.get_running_loop()
    await loop.sock_connect(sock, ("127.0.0.1", port))
    await loop.sock_sendall(sock, request)
    return sock


async def timed(
    http: aiohttp.ClientSession, exec_path: str, samples: int, within: float
) -> dict[str, list[float]]:
    took: dict[str, list[float]] = {"GET /healthz": [], "POST .../exec (true)": []}
    end = time.monotonic() + within
    for _ in range(samples):
        if time.monotonic() > end:
            break
        for name, method, path, body in (
            ("GET /healthz", "GET", "/healthz", None),
            ("POST .../exec (true)", "POST", exec_path, {"command": "true"}),
        ):
            t = time.perf_counter()
            status, _ = await call(http, method, path, body)
            took[name].append((time.perf_counter() - t) * 1000)
            assert status == 200, status
    return took


async def main(held: int, samples: int) -> None:
    async with store() as db, server(db, INSTANCE) as http:
        port = int(str(http._base_url).rsplit(":", 1)[1].rstrip("/"))
        try:
            status, box = await call(http, "POST", "/v1/sandboxes", {})
            assert status == 201, box
            exec_path = f"/v1/sandboxes/{box['id']}/exec"
            await timed(http, exec_path, 20, 30)  # warm up
            idle = await timed(http, exec_path, samples, 60)
            socks = [*await asyncio.gather(*(hold(port, BODY) for _ in range(held // 2)))]
            socks += await asyncio.gather(*(hold(port, HEADERS) for _ in range(held - held // 2)))
            try:
                loaded = await timed(http, exec_path, samples, 7)  # under the 10 s read timeouts
            finally:
                for sock in socks:
                    sock.close()
            print(f"{held} connections held from {SLOW}; the tenant's requests one after another\n")
            print(header())
            for name in idle:
                print(row(f"{name}, idle", idle[name]))
                print(row(f"{name}, {held} held", loaded[name]))
            print()
            for name in idle:
                ratio = pct(loaded[name], 0.5) / pct(idle[name], 0.5)
                print(f"{name}: p50 held / idle = {ratio:.2f}")
        finally:
            await remove_containers(INSTANCE)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--held", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.held, args.samples))
