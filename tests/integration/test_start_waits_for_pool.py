"""A session started while its environment's pool is full only because a member is on its way
back to ready (reset after the last session, or a refill being created) waits for it and gets
it warm, instead of a 503 that says "retry shortly" (which CI met in a test that started a
session just after ending one). A pool full of members in use still answers 503 at once. The
services are assembled in the test's own event loop, so a start can run beside an end."""

from __future__ import annotations

import asyncio
import secrets

import pytest

from sandlot.domain.errors import NoCapacity
from sandlot.runtime.docker import DockerRuntime
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from sandlot.wiring import assemble

pytestmark = pytest.mark.timeout(120)


async def test_a_start_waits_for_the_member_being_reset_and_a_busy_pool_refuses_at_once(
    app_settings: Settings, accounts: AccountService, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = app_settings.model_copy(update={"reconcile_on_start": False, "reconcile_enabled": False})
    tenant = await accounts.create_tenant(f"t-{secrets.token_hex(4)}")
    key = (await accounts.create_key(tenant.id)).plaintext
    async with assemble(settings, None, None) as services:
        me = await services.accounts.authenticate(f"Bearer {key}")
        env = await services.environments.create(
            me, "one", {"images": ["sandlot/busybox:latest"], "pool_size": [1, 1]}
        )
        for _ in range(600):
            if any(b.status == "ready" for b in await services.sandboxes.list(me)):
                break
            await asyncio.sleep(0.1)
        first, warm = await services.sessions.start(me, env.name)
        assert warm
        with pytest.raises(NoCapacity):  # its only member is in use: nothing is on its way
            await services.sessions.start(me, env.name)

        resetting = asyncio.Event()
        reset = DockerRuntime.reset

        async def seen_reset(self: DockerRuntime, *args, **kwargs):  # type: ignore[no-untyped-def]
            resetting.set()
            await asyncio.sleep(0.3)  # a slow reset: the start below meets it under way
            return await reset(self, *args, **kwargs)

        monkeypatch.setattr(DockerRuntime, "reset", seen_reset)
        ending = asyncio.create_task(services.sessions.end(me, first.id))
        await resetting.wait()
        second, warm = await services.sessions.start(me, env.name)
        await ending
        monkeypatch.undo()
        assert warm and second.sandbox_id == first.sandbox_id  # the member, back from its reset
        await services.sessions.end(me, second.id)
        await services.environments.delete(me, env.id)
