"""An idle pool sandbox's features are checked (the shell's keepalive) at most every
``pool_check_interval``, however often its environment's housekeeping rounds come: those
rounds replace dead sandboxes and refill the pool, and a keepalive of every idle sandbox each
round (50 programs a second for a pool of 50 at a one-second interval) was work competing with
the sessions being started."""

from __future__ import annotations

import asyncio
import secrets
from collections import Counter

import pytest

from sandlot.features.base import SandboxContext
from sandlot.features.shell import ShellFeature
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from sandlot.wiring import assemble

pytestmark = pytest.mark.timeout(120)


async def test_an_idle_sandbox_is_checked_once_per_check_interval_not_every_round(
    app_settings: Settings, accounts: AccountService, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = app_settings.model_copy(update={"pool_check_interval": 3.0, "pool_interval": 0.1})
    tenant = await accounts.create_tenant(f"t-{secrets.token_hex(4)}")
    key = (await accounts.create_key(tenant.id)).plaintext
    checks: list[tuple[str, float]] = []
    keepalive = ShellFeature.housekeep

    async def counted(self: ShellFeature, ctx: SandboxContext) -> None:
        if ctx.settings.pool_check_interval == 3.0:  # this test's services, not another app's
            checks.append((ctx.ref, asyncio.get_running_loop().time()))
        await keepalive(self, ctx)

    monkeypatch.setattr(ShellFeature, "housekeep", counted)
    async with assemble(settings, None, None) as services:
        me = await services.accounts.authenticate(f"Bearer {key}")
        env = await services.environments.create(
            me,
            "checked",
            {"images": ["sandlot/busybox:latest"], "pool_size": [1, 1], "housekeeping_interval_seconds": 0.1},
        )
        try:
            for _ in range(300):  # ready, then waiting for its first check
                if checks:
                    break
                await asyncio.sleep(0.1)
            assert checks, "the idle sandbox was never checked"
            await asyncio.sleep(1.5)  # ten rounds or more came and went
            # The services see every environment in the shared test database, so sandboxes
            # other tests left idle are checked too: each, ours included, at most once here.
            twice = [ref for ref, n in Counter(ref for ref, _ in checks).items() if n > 1]
            assert not twice, checks
        finally:
            await services.environments.delete(me, env.id)
