"""Suspend, resume and end of one session at once, as two API processes (or a client and a
reaper) do: a session is suspended once, its stopped processes go on after a resume, and an end
that races a suspend leaves no stopped process in the sandbox it hands back to the pool.

Before the session lock, two reapers both suspended an idle session, and the second one's
snapshot started a ``docker exec`` just as the first froze the container: the container was
wedged (its resume hung, CI stalled until the exec was killed by hand)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest

from tests.integration.api.test_processes import Live
from tests.integration.conftest import Api, NewTenant

TICKER = "(while :; do echo x >> /tmp/ticks; sleep 0.05; done) >/dev/null 2>&1 &"


@pytest.fixture
async def live(live_server: str, new_tenant: NewTenant) -> AsyncIterator[Live]:
    client = Live(live_server, await new_tenant())
    yield client
    await client.http.aclose()


async def ticking(live: Live, sid: str) -> bool:
    """Whether the session's ticker goes on (its file grows within half a second)."""
    before = int(await live.sh(sid, "wc -c < /tmp/ticks"))
    await asyncio.sleep(0.5)
    return int(await live.sh(sid, "wc -c < /tmp/ticks")) > before


async def test_two_suspends_at_once_suspend_once(live: Live) -> None:
    sid = await live.session()
    await live.sh(sid, f"echo kept > f; {TICKER}")
    first, second = await asyncio.gather(
        live.http.post(f"/v1/sessions/{sid}/suspend"), live.http.post(f"/v1/sessions/{sid}/suspend")
    )
    assert sorted([first.status_code, second.status_code]) == [200, 409], (first.text, second.text)
    resumed = await live.http.post(f"/v1/sessions/{sid}/resume")
    assert resumed.status_code == 200 and resumed.json()["how"] == "reattached", resumed.text
    assert await live.sh(sid, "cat f") == "kept\n"
    assert await ticking(live, sid)
    await live.http.delete(f"/v1/sessions/{sid}")


async def test_a_suspend_in_each_of_two_processes_suspends_once(live: Live, api: Api) -> None:
    """The live server and the in-process app share the store: one suspends, the other finds
    the session suspended (409), whichever comes first."""
    sid = await live.session()
    await live.sh(sid, TICKER)
    there = asyncio.create_task(live.http.post(f"/v1/sessions/{sid}/suspend"))
    await asyncio.sleep(0.05)  # its request is on its way; the in-process one blocks this loop
    here = await api.client.post(f"/v1/sessions/{sid}/suspend", headers=live.h)
    codes = sorted([here.status_code, (await there).status_code])
    assert codes == [200, 409], (here.text, (await there).text)
    resumed = await live.http.post(f"/v1/sessions/{sid}/resume")
    assert resumed.status_code == 200, resumed.text
    assert await ticking(live, sid)
    await live.http.delete(f"/v1/sessions/{sid}")


async def test_an_end_racing_a_suspend_hands_back_a_sandbox_that_runs(live: Live) -> None:
    name = f"race-{secrets.token_hex(3)}"
    env = await live.http.post(
        "/v1/environments", json={"name": name, "images": ["sandlot/busybox:latest"], "pool_size": [1, 1]}
    )
    assert env.status_code == 201, env.text
    for _ in range(3):
        started = await live.http.post("/v1/sessions", json={"environment": name})
        assert started.status_code == 201, started.text
        sid = started.json()["id"]
        await live.sh(sid, TICKER)
        suspended, ended = await asyncio.gather(
            live.http.post(f"/v1/sessions/{sid}/suspend"), live.http.delete(f"/v1/sessions/{sid}")
        )
        assert suspended.status_code in (200, 409), suspended.text
        assert ended.status_code == 204, ended.text
        # whatever sandbox the next session gets, nothing in it is stopped
        nxt = await live.http.post("/v1/sessions", json={"environment": name})
        assert nxt.status_code == 201, nxt.text
        nid = nxt.json()["id"]
        states = await live.sh(nid, "for f in /proc/[0-9]*/stat; do set -- $(cat $f); echo $3; done")
        assert "T" not in states.split(), states
        await live.http.delete(f"/v1/sessions/{nid}")
