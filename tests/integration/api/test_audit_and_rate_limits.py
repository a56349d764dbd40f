"""The audit trail and the per-key rate limit.

Every state change a key makes is recorded (who, what, on what, how it ended) and listed to
operators (a tenant's key lists its own tenant's). The rate limit is one token bucket per key in
the store: two API processes (this one and a real ``sandlot serve``) draw from the same bucket,
a key over its limit gets 429 with ``Retry-After`` and ``RateLimit-*`` headers, and another
key is unaffected."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.conftest import BUSYBOX, INSTANCE
from tests.integration.conftest import Headers, NewTenant
from tests.integration.servers import Server

BURST = 6


async def test_state_changes_are_audited_and_listed_by_scope(
    client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    made = await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)
    sid, alice_tenant = made.json()["id"], made.json()["tenant_id"]
    refused = await client.post("/v1/sandboxes", json={"image": BUSYBOX, "memory_mb": 8}, headers=bob)
    assert refused.status_code == 422
    bob_tenant = (await client.get("/v1/tenants", headers=bob)).json()[0]["id"]
    try:
        assert (await client.delete(f"/v1/sandboxes/{sid}", headers=alice)).status_code == 204
        assert (await client.delete("/v1/sandboxes/sbx_0000000000000000", headers=alice)).status_code == 404
        # a wrong key is nobody: nothing is recorded for it
        wrong = {"Authorization": "Bearer sl_00000000_nope"}
        assert (await client.delete(f"/v1/sandboxes/{sid}", headers=wrong)).status_code == 401

        listed = await client.get("/v1/audit", params={"tenant": alice_tenant}, headers=operator)
        assert listed.status_code == 200, listed.text
        trail = [(e["action"], e["target"], e["status"], e["outcome"]) for e in listed.json()]
        assert trail == [
            ("DELETE /v1/sandboxes/{sandbox_id}", "sbx_0000000000000000", 404, "not_found"),
            ("DELETE /v1/sandboxes/{sandbox_id}", sid, 204, "ok"),
            ("POST /v1/sandboxes", sid, 201, "ok"),
        ]
        assert all(e["tenant_id"] == alice_tenant and not e["operator"] for e in listed.json())
        assert listed.json()[0]["client"]  # the peer's address

        # a tenant key lists its own tenant's trail only, whatever it asks for
        own = await client.get("/v1/audit", params={"tenant": bob_tenant}, headers=alice)
        assert own.status_code == 200
        assert {e["tenant_id"] for e in own.json()} == {alice_tenant}
        theirs = (await client.get("/v1/audit", headers=bob)).json()
        assert [(e["action"], e["outcome"]) for e in theirs] == [("POST /v1/sandboxes", "validation_error")]
        # reads are not state changes: the listings above left no trace
        again = await client.get("/v1/audit", params={"tenant": alice_tenant}, headers=operator)
        assert len(again.json()) == 3
    finally:
        await client.delete(f"/v1/sandboxes/{sid}", headers=alice)


@pytest.fixture
async def strict(app_settings: Settings, tmp_path: Path) -> AsyncIterator[tuple[AsyncTestClient, str]]:
    """Two API processes of one deployment with a tight rate limit: an app in this process and
    a ``sandlot serve`` beside it, on the same database."""
    limits = {"rate_limit_per_second": 0.5, "rate_limit_burst": BURST}
    here = app_settings.model_copy(update={**limits, "data_dir": tmp_path / "here"})
    env = {
        "SANDLOT_DATABASE_URL": app_settings.database_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": f"{INSTANCE}-rate",
        "SANDLOT_DATA_DIR": str(tmp_path / "there"),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_RATE_LIMIT_PER_SECOND": "0.5",
        "SANDLOT_RATE_LIMIT_BURST": str(BURST),
    }
    with Server(env, tmp_path / "server.log") as server:
        async with AsyncTestClient(create_app(here), timeout=60) as local:
            yield local, server.url


async def test_a_key_over_its_rate_gets_429_across_two_processes_and_others_do_not(
    strict: tuple[AsyncTestClient, str], new_tenant: NewTenant, operator: Headers
) -> None:
    local, url = strict
    alice, bob = await new_tenant(), await new_tenant()
    async with httpx.AsyncClient(base_url=url, timeout=60) as remote:
        first = await remote.get("/v1/tenants", headers=alice)
        alice_tenant, seen = first.json()[0]["id"], [int(first.headers["RateLimit-Remaining"])]
        for i in range(BURST - 1):
            answer = await (local if i % 2 == 0 else remote).get("/v1/sandboxes", headers=alice)
            assert answer.status_code == 200, answer.text
            assert answer.headers["RateLimit-Limit"] == str(BURST)
            seen.append(int(answer.headers["RateLimit-Remaining"]))
        # one bucket for both processes: every request took from it, whichever served it
        assert seen == sorted(seen, reverse=True) and seen[-1] == 0, seen
        for client in (local, remote):
            refused = await client.get("/v1/sandboxes", headers=alice)
            assert refused.status_code == 429, refused.text
            assert refused.json()["code"] == "rate_limited" and refused.json()["retryable"] is True
            assert 1 <= int(refused.headers["Retry-After"]) <= 2
            assert refused.headers["RateLimit-Remaining"] == "0"
        # another key (another tenant's) is unaffected, on either process
        for client in (local, remote):
            fine = await client.get("/v1/sandboxes", headers=bob)
            assert fine.status_code == 200 and int(fine.headers["RateLimit-Remaining"]) >= BURST - 2
        # a refused request was still a request a key made: a state change refused is audited
        made = await remote.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)
        assert made.status_code == 429
        # at once, from both processes: the bucket never lets more through than it holds
        carol = await new_tenant()
        answers = await asyncio.gather(
            *((local, remote)[i % 2].get("/v1/sandboxes", headers=carol) for i in range(2 * BURST + 2))
        )
        allowed = sum(a.status_code == 200 for a in answers)
        assert BURST <= allowed <= BURST + 1, [a.status_code for a in answers]
        assert {a.status_code for a in answers} == {200, 429}
        trail = await remote.get("/v1/audit", params={"tenant": alice_tenant}, headers=operator)
        assert [(e["action"], e["status"], e["outcome"]) for e in trail.json()] == [
            ("POST /v1/sandboxes", 429, "rate_limited")
        ]


async def test_no_limit_means_no_headers_and_no_bucket(
    app_settings: Settings, tmp_path: Path, new_tenant: NewTenant
) -> None:
    free = app_settings.model_copy(update={"rate_limit_per_second": 0, "data_dir": tmp_path})
    alice = await new_tenant()
    async with AsyncTestClient(create_app(free), timeout=60) as c:
        for _ in range(3):
            answer = await c.get("/v1/sandboxes", headers=alice)
            assert answer.status_code == 200 and "RateLimit-Limit" not in answer.headers
