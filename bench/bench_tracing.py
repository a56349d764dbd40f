"""The cost of tracing on a shell command round trip, on vs off, in one run.

Starts two ``sandlot serve`` processes on the same database: one with tracing off (the
default), one exporting every span over OTLP/HTTP (batched, the production set-up) to a local
sink that accepts and counts the exports. Each runs the same shell command through the HTTP API;
the two are measured in alternating blocks so drift on this shared machine hits both alike.

Usage: ``uv run python bench/bench_tracing.py [--samples 400]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import time

from aiohttp import web
from harness import IMAGE, call, free_port, header, pct, remove_containers, row, server, settle, store

INSTANCE = f"bench-otel-{secrets.token_hex(3)}"


async def sink() -> tuple[web.AppRunner, int, list[int]]:
    """An OTLP/HTTP endpoint that accepts everything: (runner, port, bytes per export)."""
    received: list[int] = []

    async def traces(request: web.Request) -> web.Response:
        received.append(len(await request.read()))
        return web.Response(status=200, content_type="application/x-protobuf", body=b"")

    app = web.Application(client_max_size=64 << 20)
    app.router.add_post("/v1/traces", traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner, port, received


async def shell_session(http, name: str) -> str:  # type: ignore[no-untyped-def]
    await call(http, "POST", "/v1/environments", {"name": name, "images": [IMAGE], "pool_size": [1, 2]})
    await settle(http, 1)
    status, body = await call(http, "POST", "/v1/sessions", {"environment": name})
    assert status == 201, body
    run = f"/v1/sessions/{body['id']}/features/shell/run"
    for _ in range(20):
        await call(http, "POST", run, {"command": "echo hi"})
    return run


async def block(http, run: str, n: int, out: list[float]) -> None:  # type: ignore[no-untyped-def]
    for _ in range(n):
        t = time.perf_counter()
        _, body = await call(http, "POST", run, {"command": "echo hi"})
        out.append((time.perf_counter() - t) * 1000)
        assert body["stdout"] == "hi\n", body


async def main(samples: int) -> None:
    runner, port, received = await sink()
    traced_env = {"SANDLOT_OTEL_EXPORTER": "otlp-http", "SANDLOT_OTEL_ENDPOINT": f"http://127.0.0.1:{port}"}
    off: list[float] = []
    on: list[float] = []
    try:
        async with store() as db:
            try:
                async with (
                    server(db, INSTANCE, {"SANDLOT_POOL_ENABLED": "true"}) as plain,
                    server(db, INSTANCE, {**traced_env, "SANDLOT_POOL_ENABLED": "false"}) as traced,
                ):
                    run_off = await shell_session(plain, "off")
                    run_on = await shell_session(traced, "on")  # the plain server's pool fills it
                    for _ in range(max(1, samples // 50)):
                        await block(plain, run_off, 50, off)
                        await block(traced, run_on, 50, on)
                    await asyncio.sleep(6)  # let the batch processor export what is left
            finally:
                await remove_containers(INSTANCE)
    finally:
        await runner.cleanup()

    print(f"\nTracing overhead on a shell command ({os.cpu_count()} cores, PostgreSQL, Docker)\n")
    print(header())
    print(row("shell via HTTP API, tracing off (default)", off))
    print(row("shell via HTTP API, tracing on (OTLP/HTTP, batched)", on))
    print(
        f"\noverhead at p50: {pct(on, 0.5) - pct(off, 0.5):+.2f} ms "
        f"({(pct(on, 0.5) / pct(off, 0.5) - 1) * 100:+.0f}%); the traced server exported "
        f"{len(received)} batches, {sum(received) / 1024:.0f} KiB"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=400)
    asyncio.run(main(parser.parse_args().samples))
