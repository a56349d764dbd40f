"""A background process's stdin against a real ``sandlot serve`` on real Docker: a pipe that is
written to and closed, a terminal (``script`` in the python image) on which the command sees a
tty and ^C interrupts it, a kill that reaches the terminal's own session, and the refusals: no
stdin, an ended process, a closed stdin, a full pipe, oversized or broken input, another
tenant's or another session's process."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import AsyncIterator

import pytest

from tests.integration.conftest import NewTenant
from tests.support.processes import Live

pytestmark = [pytest.mark.docker, pytest.mark.postgres]

COUNT_SLEEPS = (
    "n=0; for f in /proc/[0-9]*/cmdline; do"
    " case $(tr '\\0' ' ' < $f) in 'sleep 30'[67]*) n=$((n+1));; esac; done; echo $n"
)


@pytest.fixture
async def live(live_server: str, new_tenant: NewTenant) -> AsyncIterator[Live]:
    client = Live(live_server, await new_tenant())
    yield client
    await client.http.aclose()


async def session_on(live: Live, image: str) -> str:
    name = f"stdin-{secrets.token_hex(3)}"
    env = await live.http.post("/v1/environments", json={"name": name, "images": [image]})
    assert env.status_code == 201, env.text
    resp = await live.http.post("/v1/sessions", json={"environment": name})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def write(live: Live, sid: str, pid: str, data: str, eof: bool = False) -> int:
    resp = await live.http.post(f"/v1/sessions/{sid}/processes/{pid}/stdin", json={"data": data, "eof": eof})
    return resp.status_code


async def output_until(live: Live, sid: str, pid: str, needle: bytes, timeout: float = 60) -> bytes:
    """The output so far, once it contains ``needle`` (read while the process runs)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = (await live.http.get(f"/v1/sessions/{sid}/processes/{pid}/output")).content
        if needle in out:
            return out
        await asyncio.sleep(0.2)
    pytest.fail(f"{needle!r} never appeared")


async def test_a_process_reads_its_stdin_until_it_is_closed(live: Live) -> None:
    sid = await live.session()
    proc = await live.start(sid, 'read a; echo "got $a"; cat; echo "end $?"', stdin=True)
    assert await write(live, sid, proc["id"], "one\n") == 204
    await output_until(live, sid, proc["id"], b"got one\n")
    assert await write(live, sid, proc["id"], "two\nthree é", eof=True) == 204
    done = await live.wait_done(sid, proc["id"])
    assert done["status"] == "exited" and done["exit_code"] == 0
    out = await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}/output")
    assert out.content == "got one\ntwo\nthree éend 0\n".encode()
    assert await write(live, sid, proc["id"], "late\n") == 409  # it has ended


async def test_a_tty_process_has_a_terminal_and_ctrl_c_interrupts_it(live: Live) -> None:
    sid = await session_on(live, "sandlot/python:3")
    script = "tty; stty size; printf 'name? '; read n; echo \"hi $n\"; sleep 300; echo not reached"
    proc = await live.start(sid, script, tty=True)
    # the prompt is read while the command waits: output is not held back in a buffer
    await output_until(live, sid, proc["id"], b"name? ")
    assert await write(live, sid, proc["id"], "bob\n") == 204
    await output_until(live, sid, proc["id"], b"hi bob")
    assert await write(live, sid, proc["id"], "\x03") == 204  # ^C, as a keyboard sends it
    done = await live.wait_done(sid, proc["id"])
    assert done["status"] == "exited" and done["exit_code"] == 130
    out = (await live.http.get(f"/v1/sessions/{sid}/processes/{proc['id']}/output")).content
    assert out.startswith(b"/dev/pts/") and b"\r\n24 80\r\n" in out
    assert b"name? bob\r\nhi bob\r\n^C" in out and b"not reached" not in out


async def test_killing_a_tty_process_kills_its_terminal_session_too(live: Live) -> None:
    sid = await session_on(live, "sandlot/python:3")
    proc = await live.start(sid, "sleep 306 & sleep 307", tty=True)
    deadline = time.monotonic() + 30
    while (await live.sh(sid, COUNT_SLEEPS)).strip() != "2":
        assert time.monotonic() < deadline, "the sleeps never started"
        await asyncio.sleep(0.2)
    killed = (await live.http.post(f"/v1/sessions/{sid}/processes/{proc['id']}/kill")).json()
    assert killed["status"] == "killed"
    assert (await live.sh(sid, COUNT_SLEEPS)).strip() == "0"
    assert await write(live, sid, proc["id"], "x") == 409


async def test_stdin_refusals(live: Live, new_tenant: NewTenant) -> None:
    sid = await live.session()  # busybox: no `script`, so no terminal
    base = f"/v1/sessions/{sid}/processes"
    no_tty = await live.http.post(base, json={"command": "true", "tty": True})
    assert no_tty.status_code == 422 and no_tty.json()["field"] == "tty"

    plain = await live.start(sid, "sleep 30")
    assert await write(live, sid, plain["id"], "x") == 409  # started without stdin

    proc = await live.start(sid, "sleep 300", stdin=True)  # never reads its stdin
    path = f"{base}/{proc['id']}/stdin"
    stranger = await new_tenant()
    assert (await live.http.post(path, json={"data": "x"}, headers=stranger)).status_code == 404
    other_sid = await live.session()  # the same tenant's other session does not reach it
    other = f"/v1/sessions/{other_sid}/processes/{proc['id']}/stdin"
    assert (await live.http.post(other, json={"data": "x"})).status_code == 404
    assert (await live.http.post(f"{base}/prc_nope/stdin", json={"data": "x"})).status_code == 404

    assert (await live.http.post(path, json={"data": "x" * (64 << 10 | 1)})).status_code == 422
    assert (await live.http.post(path, json={"data": "é" * 40_000})).status_code == 413  # 80,000 bytes
    assert (await live.http.post(path, json={"data": "x", "more": 1})).status_code == 422
    surrogate = await live.http.post(
        path, content=b'{"data": "\\ud800"}', headers={"content-type": "application/json"}
    )
    assert surrogate.status_code in (400, 422)

    # a full pipe: the write waits a few seconds, then gives up instead of hanging
    assert await write(live, sid, proc["id"], "y" * 40_000) == 204
    full = await live.http.post(path, json={"data": "z" * 40_000})
    assert full.status_code == 409 and "in time" in full.json()["detail"]

    closing = await live.start(sid, "cat > /dev/null; sleep 300", stdin=True)
    assert await write(live, sid, closing["id"], "", eof=True) == 204
    closed = await live.http.post(f"{base}/{closing['id']}/stdin", json={"data": "x"})
    assert closed.status_code == 409 and "closed" in json.dumps(closed.json())
    for p in (plain, proc, closing):
        await live.http.post(f"{base}/{p['id']}/kill")
