"""The console's audit page: operators see every tenant's state changes (or one tenant's), a
tenant sees its own only, and a filter value that is not an id is no filter."""

from __future__ import annotations

import asyncio
import time

from litestar.testing import AsyncTestClient

from tests.conftest import BUSYBOX
from tests.integration.conftest import Headers, NewTenant, key_of
from tests.support.console import sign_in


async def test_operators_see_every_tenants_trail_and_tenants_their_own(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    mine = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=alice)).json()
    theirs = (await client.post("/v1/sandboxes", json={"image": BUSYBOX}, headers=bob)).json()
    try:
        await sign_in(browser, key_of(operator))
        # another app (API process) made them: its events are written within a flush interval
        deadline = time.monotonic() + 30
        while (
            mine["id"]
            not in (page := await browser.get("/console/audit/", params={"tenant": mine["tenant_id"]})).text
        ):
            assert time.monotonic() < deadline, page.text[-1500:]
            await asyncio.sleep(0.2)
        assert page.status_code == 200 and "Audit trail" in page.text
        assert mine["id"] in page.text and theirs["id"] not in page.text
        assert "POST /v1/sandboxes" in page.text
        # a filter that is not an id is no filter (every tenant's newest events), never an error
        everyone = await browser.get("/console/audit/", params={"tenant": "not an id!"})
        assert everyone.status_code == 200 and 'name="tenant" value=""' in everyone.text

        await sign_in(browser, key_of(bob))
        deadline = time.monotonic() + 30  # written by the other app within a flush interval
        while (
            theirs["id"]
            not in (own := await browser.get("/console/audit/", params={"tenant": mine["tenant_id"]})).text
        ):
            assert time.monotonic() < deadline, own.text[-1500:]
            await asyncio.sleep(0.2)
        assert own.status_code == 200 and theirs["id"] in own.text and mine["id"] not in own.text
    finally:
        await client.delete(f"/v1/sandboxes/{mine['id']}", headers=alice)
        await client.delete(f"/v1/sandboxes/{theirs['id']}", headers=bob)
