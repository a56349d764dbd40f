"""The live stream of a fast process on an image with GNU tail (the bytes come as they are
written, not from a polled file): an exact byte sequence survives dropped connections in the
middle of a fast stream, across the hand-over from stored to live bytes, and a reader that asks
for an offset the output has not reached yet gets exactly what follows it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import AsyncIterator

import pytest
import websockets

from tests.integration.api.test_processes import Live
from tests.integration.conftest import NewTenant

FIRST = 60_000
SECOND = 120_000  # 0.8 MB in all: under the default output cap of 1 MiB
#: a fast burst, a pause with the reader caught up (live), another fast burst
COMMAND = f"seq 1 {FIRST}; sleep 4; seq {FIRST + 1} {SECOND}"
EXPECTED = "".join(f"{i}\n" for i in range(1, SECOND + 1)).encode()
FIRST_BYTES = len("".join(f"{i}\n" for i in range(1, FIRST + 1)).encode())


@pytest.fixture
async def live(live_server: str, new_tenant: NewTenant) -> AsyncIterator[Live]:
    client = Live(live_server, await new_tenant())
    yield client
    await client.http.aclose()


async def python_session(live: Live, image: str = "sandlot/python:3") -> str:
    name = f"fast-{secrets.token_hex(3)}"
    env = await live.http.post("/v1/environments", json={"name": name, "images": [image]})
    assert env.status_code == 201, env.text
    resp = await live.http.post("/v1/sessions", json={"environment": name})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def read_from(live: Live, sid: str, pid: str, received: bytearray, until: int | None) -> dict | None:
    """One connection from ``len(received)``, appending to ``received``: it drops (as a failed
    network would) at the first frame that takes ``received`` to ``until`` bytes or more, or
    reads everything and returns the exit frame (``until`` None)."""
    url = live.ws_url(sid, pid, len(received))
    async with websockets.connect(url, additional_headers=live.h, max_size=None) as ws:
        async for message in ws:
            if isinstance(message, str):
                return dict(json.loads(message))
            received += message
            if until is not None and len(received) >= until:
                return None
    pytest.fail("the stream closed without an exit frame")


async def test_a_fast_stream_survives_drops_across_the_hand_over_to_live_bytes(live: Live) -> None:
    sid = await python_session(live)
    proc = await live.start(sid, COMMAND)
    received = bytearray()
    # dropped: at the first frame (the first burst, read from what is stored), once the whole
    # first burst is in (the reader has caught up and waits live in the pause), at the first
    # frame of the second burst (live bytes); then read to the end
    for until in (1, FIRST_BYTES, FIRST_BYTES + 1):
        assert await read_from(live, sid, proc["id"], received, until) is None  # dropped mid-stream
        assert len(received) <= len(EXPECTED)
    final = await read_from(live, sid, proc["id"], received, None)
    assert final is not None and final["type"] == "exit" and final["exit_code"] == 0
    assert final["offset"] == len(EXPECTED) == len(received)
    assert hashlib.sha256(received).hexdigest() == hashlib.sha256(EXPECTED).hexdigest()


async def test_a_reader_ahead_of_the_output_gets_exactly_what_follows_its_offset(live: Live) -> None:
    sid = await python_session(live)
    proc = await live.start(sid, COMMAND)
    for _ in range(100):  # until the first burst is out and the process pauses
        row = (await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}")).json()
        if row["output_bytes"] >= FIRST_BYTES:
            break
        await asyncio.sleep(0.05)
    ahead = FIRST_BYTES + 1234  # not written yet: the second burst has not begun
    got = bytearray(ahead)  # as if the reader had those bytes already
    final = await read_from(live, sid, proc["id"], got, None)
    assert final is not None and final["offset"] == len(EXPECTED)
    assert got[ahead:] == EXPECTED[ahead:]


async def processes(live: Live, sid: str) -> str:
    """The sandbox's processes, one command line a line."""
    return await live.sh(
        sid, "for p in /proc/[0-9]*; do tr '\\0\\n' ' ~' < $p/cmdline 2>/dev/null; echo; done"
    )


@pytest.mark.parametrize("image", ["sandlot/python:3", "sandlot/busybox:latest"])
async def test_no_follower_outlives_its_reader(live: Live, image: str) -> None:
    sid = await python_session(live, image)
    proc = await live.start(sid, "sleep 60")  # prints nothing: a follower never writes
    followers: list[str] = []
    for _ in range(3):
        async with websockets.connect(live.ws_url(sid, proc["id"], 0), additional_headers=live.h):
            for _ in range(300):  # a loaded machine can take seconds
                followers = [p for p in (await processes(live, sid)).splitlines() if "over() {" in p]
                if followers:
                    break
                await asyncio.sleep(0.1)
            assert followers  # the stream's follower runs while its reader is there
    for _ in range(300):
        followers = [p for p in (await processes(live, sid)).splitlines() if "over() {" in p]
        if not followers:
            break
        await asyncio.sleep(0.1)
    assert not followers, followers
    row = (await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}")).json()
    assert row["status"] == "running"  # the command itself goes on
    await live.http.post(f"/v1/sessions/{sid}/processes/{proc['id']}/kill")


async def test_the_live_reader_waits_on_the_file_instead_of_polling_it(live: Live) -> None:
    sid = await python_session(live)
    proc = await live.start(sid, "sleep 30")
    async with websockets.connect(live.ws_url(sid, proc["id"], 0), additional_headers=live.h) as ws:
        seen = ""
        for _ in range(300):  # a loaded machine can take seconds
            seen = await processes(live, sid)
            if "--pid=" in seen:
                break
            await asyncio.sleep(0.1)
        follower = [line for line in seen.splitlines() if line.startswith("tail ") and " -f " in line]
        assert follower and "--pid=" in follower[0], seen
        assert "sleep 0.02" not in [line.strip() for line in seen.splitlines()]  # no size-polling loop
        await ws.close()
    await live.http.post(f"/v1/sessions/{sid}/processes/{proc['id']}/kill")
