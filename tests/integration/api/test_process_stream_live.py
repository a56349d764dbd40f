"""The live stream of a fast process, on both paths a reader may take: the tap of the API
process that started it (its start exec relays every byte as it is stored: no follower, no
polled file, busybox as much as Debian) and, in any other API process, the stored output
followed by ``PROC_FOLLOW`` (GNU ``tail -f`` on inotify where the image has it). On each, an
exact byte sequence survives dropped connections in the middle of a fast stream, across the
hand-over from stored to live bytes, and a reader that asks for an offset the output has not
reached yet gets exactly what follows it.

"here": the process is started by the server the reader reads from (the live server: its
tap). "elsewhere": started by the in-process app (another API process of the same store),
read from the live server, which has no tap for it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator

import pytest
import websockets

from tests.conftest import INSTANCE
from tests.integration.conftest import Api, NewTenant
from tests.integration.servers import Server
from tests.support.processes import Live

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


async def start(live: Live, api: Api, sid: str, command: str, where: str) -> dict:
    """Start a background process here (the live server) or elsewhere (the in-process app)."""
    if where == "here":
        return await live.start(sid, command)
    resp = await api.client.post(f"/v1/sessions/{sid}/processes", json={"command": command}, headers=live.h)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


PATHS = [("here", "sandlot/busybox:latest"), ("here", "sandlot/python:3")]
PATHS += [("elsewhere", "sandlot/busybox:latest"), ("elsewhere", "sandlot/python:3")]


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


@pytest.mark.parametrize(("where", "image"), PATHS)
async def test_a_fast_stream_survives_drops_across_the_hand_over_to_live_bytes(
    live: Live, api: Api, where: str, image: str
) -> None:
    sid = await python_session(live, image)
    proc = await start(live, api, sid, COMMAND, where)
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


@pytest.mark.parametrize("where", ["here", "elsewhere"])
async def test_a_reader_ahead_of_the_output_gets_exactly_what_follows_its_offset(
    live: Live, api: Api, where: str
) -> None:
    sid = await python_session(live)
    proc = await start(live, api, sid, COMMAND, where)
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
async def test_no_follower_outlives_its_reader(live: Live, api: Api, image: str) -> None:
    sid = await python_session(live, image)
    proc = await start(live, api, sid, "sleep 60", "elsewhere")  # prints nothing: a follower never writes
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


async def test_the_live_reader_waits_on_the_file_instead_of_polling_it(live: Live, api: Api) -> None:
    sid = await python_session(live)
    proc = await start(live, api, sid, "sleep 30", "elsewhere")
    async with websockets.connect(live.ws_url(sid, proc["id"], 0), additional_headers=live.h) as ws:
        seen, follower = "", []
        for _ in range(300):  # a loaded machine can take seconds
            seen = await processes(live, sid)
            # (the follower script's own text names --pid= too: only tail's line counts)
            follower = [line for line in seen.splitlines() if line.startswith("tail ") and " -f " in line]
            if follower:
                break
            await asyncio.sleep(0.1)
        assert follower and "--pid=" in follower[0], seen
        assert "sleep 0.02" not in [line.strip() for line in seen.splitlines()]  # no size-polling loop
        await ws.close()
    await live.http.post(f"/v1/sessions/{sid}/processes/{proc['id']}/kill")


@pytest.mark.parametrize("image", ["sandlot/busybox:latest", "sandlot/python:3"])
async def test_a_reader_of_a_process_started_here_needs_no_follower(live: Live, image: str) -> None:
    """On the tap, lines come while the process still runs, and nothing in the sandbox follows
    or polls the output file for the reader."""
    sid = await python_session(live, image)
    proc = await live.start(sid, "i=0; while [ $i -lt 40 ]; do echo line $i; i=$((i + 1)); sleep 0.1; done")
    got = b""
    async with websockets.connect(live.ws_url(sid, proc["id"], 0), additional_headers=live.h) as ws:
        while b"line 3\n" not in got:
            got += await ws.recv()  # type: ignore[operator]
        row = (await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}")).json()
        assert row["status"] == "running"  # live: the first lines came before the process ended
        listing = await processes(live, sid)
        assert "over() {" not in listing and "tail " not in listing, listing
        async for message in ws:
            if isinstance(message, str):
                assert json.loads(message)["exit_code"] == 0
                break
            got += message
    assert got == "".join(f"line {i}\n" for i in range(40)).encode()


@pytest.fixture(scope="module")
def big_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server of the same store that keeps 64 MiB of a process's output (the live server
    keeps 1 MiB: less than a reader may fall behind by)."""
    data = tmp_path_factory.mktemp("big")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_INSTANCE": INSTANCE,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_DATA_DIR": str(data),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_PROCESS_OUTPUT_LIMIT": str(64 << 20),
        "SANDLOT_DATABASE_POOL_SIZE": "3",
    }
    with Server(settings, data / "server.log") as server:
        yield server.url


async def stop_reading_then_catch_up(live: Live, sid: str, pid: str, expected: str) -> None:
    """Read the first frame, then nothing while the process runs to its end (its status read
    meanwhile, every 0.1 s, must be answered), then everything, exactly."""
    digest, n = hashlib.sha256(), 0
    async with websockets.connect(
        live.ws_url(sid, pid, 0), additional_headers=live.h, max_size=None, max_queue=1
    ) as ws:
        first = await ws.recv()
        assert isinstance(first, bytes)
        digest.update(first)
        n += len(first)
        for _ in range(600):  # reading nothing: the process still finishes
            row = (await live.http.get(f"/v1/sessions/{sid}/processes/{pid}")).json()
            if row["status"] != "running":
                break
            await asyncio.sleep(0.1)
        assert row["status"] == "exited", row
        async for message in ws:
            if isinstance(message, str):
                assert json.loads(message)["offset"] == n
                break
            digest.update(message)
            n += len(message)
    assert digest.hexdigest() == expected


#: 28 MB: three times what a reader may fall behind by
BIG = "seq 1 3500000"
BIG_SHA256 = hashlib.sha256("".join(f"{i}\n" for i in range(1, 3_500_001)).encode()).hexdigest()


async def test_a_reader_that_stops_reading_holds_the_process_up_only_briefly(
    big_server: str, new_tenant: NewTenant
) -> None:
    """A live reader paces the process, but one that reads nothing while 28 MB go by is
    dropped from the tap after a stall (the process finishes meanwhile) and, when it reads
    again, catches up from what the tap kept and the stored output, exactly."""
    live = Live(big_server, await new_tenant())
    sid = await python_session(live)
    proc = await live.start(sid, BIG)
    await stop_reading_then_catch_up(live, sid, proc["id"], BIG_SHA256)
    await live.http.aclose()


async def test_a_follower_nobody_reads_holds_up_nothing_of_its_sandbox(
    big_server: str, api: Api, new_tenant: NewTenant
) -> None:
    """Read where no tap has it (started by another API process), the output is followed by
    ``PROC_FOLLOW`` (GNU tail). A reader that reads nothing while 28 MB go by loses its
    follower after a stall, so the sandbox's other calls go on: left unread, the follower's
    end held up every later exec of the sandbox in the engine (its status was a 502 after
    15 s), until the reader read again."""
    live = Live(big_server, await new_tenant())
    sid = await python_session(live)
    proc = await start(live, api, sid, f"{BIG}; sleep 3", "elsewhere")  # ends after the follower began
    await stop_reading_then_catch_up(live, sid, proc["id"], BIG_SHA256)
    await live.http.aclose()


@pytest.mark.parametrize("victim", ['"dd bs=65536"*', '*"start() {"*'])
async def test_a_relay_killed_in_the_sandbox_costs_the_reader_nothing(live: Live, victim: str) -> None:
    """The sandbox user may kill the relay of a process's output (its ``dd``) or the start
    script that keeps the relay's stream open: the process goes on writing its file, and the
    reader is handed over to the stored output without losing a byte."""
    sid = await python_session(live)
    proc = await live.start(sid, COMMAND)
    received = bytearray()
    async with websockets.connect(
        live.ws_url(sid, proc["id"], 0), additional_headers=live.h, max_size=None
    ) as ws:
        while len(received) < FIRST_BYTES:  # the first burst, then the pause
            received += await ws.recv()  # type: ignore[arg-type]
        relay = f"case \"$(tr '\\0' ' ' < $p/cmdline)\" in {victim}) kill ${{p#/proc/}}; echo k;; esac"
        killed = await live.sh(sid, f"for p in /proc/[0-9]*; do {relay}; done")
        assert "k" in killed
        async for message in ws:
            if isinstance(message, str):
                final = json.loads(message)
                break
            received += message
    assert final["exit_code"] == 0 and final["offset"] == len(EXPECTED)
    assert bytes(received) == EXPECTED


async def test_bytes_written_into_the_relay_from_the_sandbox_are_bounded(live: Live) -> None:
    """The sandbox user can write into a process's relay (``/proc/<leader>/fd/9``): the
    server reads no more of it than the process may keep, and the reader still gets the end."""
    sid = await python_session(live, "sandlot/busybox:latest")
    inject = "sid=$(cut -d' ' -f6 /proc/self/stat); head -c 20000000 /dev/zero > /proc/$sid/fd/9; echo done"
    proc = await live.start(sid, inject)
    got = 0
    async with websockets.connect(
        live.ws_url(sid, proc["id"], 0), additional_headers=live.h, max_size=None
    ) as ws:
        async for message in ws:
            if isinstance(message, str):
                assert json.loads(message)["type"] == "exit"
                break
            got += len(message)
    assert got <= 3 << 20  # the live server keeps 1 MiB of output, and reads 1 MiB past that
    assert (await live.sh(sid, "echo still here")) == "still here\n"
