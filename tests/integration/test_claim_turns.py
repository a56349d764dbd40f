"""Warm claims take turns (``pool_claims_at_once``): under a burst of starts, each session is
handed its sandbox in turn rather than all of them near the end, and every one still gets its
own warm sandbox. The services are assembled in the test's own event loop (the in-process test
client sends requests one at a time, so it could not start a burst)."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from sandlot.store.repositories import PoolRepository
from sandlot.wiring import assemble

pytestmark = pytest.mark.timeout(120)


async def test_a_burst_of_warm_starts_claims_a_few_at_a_time_and_all_get_a_sandbox(
    app_settings: Settings, accounts: AccountService, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = app_settings.model_copy(
        update={"pool_claims_at_once": 3, "reconcile_on_start": False, "reconcile_enabled": False}
    )
    tenant = await accounts.create_tenant(f"t-{secrets.token_hex(4)}")
    key = (await accounts.create_key(tenant.id)).plaintext
    running, most = 0, 0
    claim = PoolRepository.claim_within_quota

    async def counted(self: PoolRepository, *args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await asyncio.sleep(0.05)  # a slow database: the burst piles up behind the claims
            return await claim(self, *args, **kwargs)
        finally:
            running -= 1

    async with assemble(settings, None, None) as services:
        me = await services.accounts.authenticate(f"Bearer {key}")
        env = await services.environments.create(
            me, "burst", {"images": ["sandlot/busybox:latest"], "pool_size": [8, 8]}
        )
        for _ in range(600):  # the tenant's own sandboxes: its pool's
            if sum(b.status == "ready" for b in await services.sandboxes.list(me)) >= 8:
                break
            await asyncio.sleep(0.1)
        monkeypatch.setattr(PoolRepository, "claim_within_quota", counted)
        started = await asyncio.gather(*(services.sessions.start(me, env.name) for _ in range(8)))
        monkeypatch.undo()
        assert all(warm for _, warm in started)
        assert len({row.sandbox_id for row, _ in started}) == 8
        assert most == 3  # never more at once, and the burst did pile up
        for row, _ in started:
            await services.sessions.end(me, row.id)
        await services.environments.delete(me, env.id)
