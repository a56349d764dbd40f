"""Tenant B's view while tenant A misbehaves: the latency of B's own shell commands through
the API, idle and under load. Figures only; the suite never asserts on them (no timing
assertions in tests), they are recorded for the README and the bench."""

from __future__ import annotations

import asyncio
import secrets
import statistics
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

from litestar.testing import AsyncTestClient

__all__ = ["Neighbour", "under_load"]

T = TypeVar("T")
SAMPLES = 30


class Neighbour:
    """Another tenant with a session of its own; :meth:`p50` times ``true`` in its shell."""

    def __init__(self, client: AsyncTestClient, headers: dict[str, str]) -> None:
        self.client = client
        self.h = headers
        self.session_id = ""

    async def start(self) -> None:
        env = {"name": f"nb-{secrets.token_hex(3)}", "images": ["sandlot/busybox:latest"]}
        resp = await self.client.post("/v1/environments", json=env, headers=self.h)
        assert resp.status_code == 201, resp.text
        resp = await self.client.post("/v1/sessions", json={"environment": env["name"]}, headers=self.h)
        assert resp.status_code == 201, resp.text
        self.session_id = resp.json()["id"]
        await self.p50(3)  # the shell is attached: the first command pays for that

    async def stop(self) -> None:
        if self.session_id:
            await self.client.delete(f"/v1/sessions/{self.session_id}", headers=self.h)

    async def p50(self, samples: int = SAMPLES) -> float:
        """Median milliseconds of ``samples`` shell commands, one after another."""
        url = f"/v1/sessions/{self.session_id}/features/shell/run"
        took = []
        for _ in range(samples):
            start = time.perf_counter()
            resp = await self.client.post(url, json={"command": "true"}, headers=self.h)
            took.append((time.perf_counter() - start) * 1000)
            assert resp.status_code == 200 and resp.json()["exit_code"] == 0, resp.text
        return statistics.median(took)


async def under_load(
    neighbour: Neighbour, abuse: Awaitable[T], figures: dict[str, Any], name: str, ramp: float = 1.0
) -> T:
    """Run ``abuse``; B's idle p50 is taken first, then B's p50 while the abuse runs (after
    ``ramp`` seconds). Records and prints both; returns what the abuse returned."""
    idle = await neighbour.p50()
    task = asyncio.ensure_future(abuse)
    try:
        await asyncio.sleep(ramp)
        busy = await neighbour.p50()
        running = not task.done()
        result = await task
    finally:
        task.cancel()
    figures[name] = {
        "idle_p50_ms": round(idle, 2),
        "under_abuse_p50_ms": round(busy, 2),
        "ratio": round(busy / idle, 2),
        "abuse_still_running_at_the_end": running,
    }
    print(f"\n{name}: B's shell p50 idle {idle:.2f} ms, under abuse {busy:.2f} ms ({busy / idle:.2f}x)")
    return result
