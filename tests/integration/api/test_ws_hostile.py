"""Hostile input over the WebSockets of a real ``sandlot serve`` on real Docker (issue #15):
malformed, oversized, misplaced and out-of-order frames, floods, resize storms, and callers
holding the wrong credentials. Whatever arrives, the server answers with an error frame or a
close code that says why (never 1011 from an unhandled exception), the same server keeps
serving a well-behaved client afterwards, no shell outlives its terminal, and the server's
log holds no traceback."""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from sandlot.services.accounts import AccountService
from tests.conftest import INSTANCE
from tests.integration.api.ws_helpers import (
    Box,
    closed_with,
    echo,
    holds,
    next_control,
    read_until,
    refused,
    still_serves,
)
from tests.integration.api.ws_raw import BINARY, CLOSE, TEXT, Raw, frame
from tests.integration.conftest import Headers
from tests.integration.servers import Server

pytestmark = pytest.mark.timeout(90)

KINDS = ["session", "sandbox"]
BIG = 10 << 20


@pytest.fixture(scope="module")
def server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server of this module's own, so its log holds only what these tests caused."""
    data_dir = tmp_path_factory.mktemp("ws-hostile")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": f"{INSTANCE}-ws",
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_WORKERS": "1",
    }
    with Server(settings, data_dir / "server.log") as running:
        yield running
    assert running.log is not None
    log = running.log.read_text(errors="replace")
    assert "Traceback" not in log, log[-5000:]


async def _headers(accounts: AccountService) -> Headers:
    tenant = await accounts.create_tenant(f"ws-{secrets.token_hex(4)}")
    return {"Authorization": f"Bearer {(await accounts.create_key(tenant.id)).plaintext}"}


@pytest.fixture(scope="module")
async def box(server: Server, accounts: AccountService) -> AsyncIterator[Box]:
    headers = await _headers(accounts)
    async with httpx.AsyncClient(base_url=server.url, headers=headers, timeout=60) as http:
        name = f"ws-{secrets.token_hex(3)}"
        made = await http.post("/v1/environments", json={"name": name, "images": ["sandlot/busybox:latest"]})
        assert made.status_code == 201, made.text
        sid = sbx = ""
        try:
            resp = await http.post("/v1/sessions", json={"environment": name})
            assert resp.status_code == 201, resp.text
            sid = resp.json()["id"]
            resp = await http.post("/v1/sandboxes", json={"image": "sandlot/busybox:latest"})
            assert resp.status_code == 201, resp.text
            sbx = resp.json()["id"]
            assert server.log is not None
            yield Box(server.url, headers, sid, sbx, server.log, http)
        finally:
            if sid:
                await http.delete(f"/v1/sessions/{sid}")
            if sbx:
                await http.delete(f"/v1/sandboxes/{sbx}")


def _resize(**fields: object) -> str:
    return json.dumps({"type": "resize", **fields})


DEEP = "[" * 100_000 + "]" * 100_000
BAD_CONTROL = [
    "not json",
    "",
    "{",
    "[1, 2]",
    "42",
    "null",
    '"resize"',
    "{}",
    '{"type": "nope"}',
    '{"type": 7}',
    '{"type": ["resize"]}',
    '{"type": "stdin", "data": 5}',
    '{"type": "stdin", "data": "\\ud800"}',
    '{"type": "signal", "signal": "KILL"}',
    _resize(rows=30),
    _resize(cols=100),
    _resize(cols=-5, rows=30),
    _resize(cols=100, rows=0),
    _resize(cols=10**6, rows=30),
    _resize(cols=100, rows=2**70),
    '{"type": "resize", "cols": 1e400, "rows": 30}',
    '{"type": "resize", "cols": NaN, "rows": 30}',
    '{"type": "resize", "cols": ' + "9" * 5000 + ', "rows": 30}',
    _resize(cols="100", rows="30"),
    _resize(cols=100.0, rows=30.0),
    _resize(cols=100.5, rows=30),
    _resize(cols=True, rows=True),
    _resize(cols=None, rows=None),
    _resize(cols=[100], rows={"n": 30}),
    DEEP,
    '{"type": "resize", "cols": ' + DEEP + ', "rows": 30}',
    '{"type": "stdin", "data": ' + "[" * 50_000 + "]" * 50_000 + "}",
]


@pytest.mark.parametrize("kind", KINDS)
async def test_bad_control_frames_get_an_error_frame_and_the_shell_lives(box: Box, kind: str) -> None:
    async with box.pty(kind, "?cols=80&rows=24") as conn:
        for bad in BAD_CONTROL:
            await conn.send(bad)
            try:
                reply = await next_control(conn)
            except ConnectionClosed as exc:
                raise AssertionError(f"closed after {bad[:80]!r}: {exc}") from None
            assert reply["type"] == "error" and reply["code"] == "invalid_input", (bad[:80], reply)
            assert len(reply["message"]) < 200  # the frame is not echoed back whole
        # extra fields are ignored; the size itself applies
        await conn.send(_resize(cols=101, rows=31, extra={"nested": [1, 2, 3]}, more="x" * 1000))
        await conn.send(b"stty size\n")
        await read_until(conn, b"31 101")
        await echo(conn)
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("payload", [b"x" * BIG, "x" * BIG], ids=["binary", "text"])
async def test_a_10_mib_frame_closes_with_1009_and_a_reason(
    box: Box, kind: str, payload: bytes | str
) -> None:
    async with box.pty(kind, compression=None) as conn:
        await echo(conn)
        await conn.send(payload)
        code, reason = await closed_with(conn)
    assert code == 1009 and "limited to" in reason
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_binary_is_keystrokes_and_text_is_control_never_the_other_way(box: Box, kind: str) -> None:
    async with box.pty(kind, "?cols=80&rows=24") as conn:
        # a resize sent as binary is typed, not obeyed: the size stays 24x80
        await conn.send(_resize(cols=50, rows=20).encode())
        await conn.send(b"\x15stty size\n")  # Ctrl-U drops the typed JSON first
        await read_until(conn, b"24 80")
        # keystrokes sent as text are not typed: an error frame says why
        await conn.send("echo typed-as-text\n")
        assert (await next_control(conn))["message"] == "text frames are JSON objects"
        await conn.send(b"")  # an empty binary frame types nothing and is no error
        await conn.send(json.dumps({"type": "ping"}))
        assert (await next_control(conn))["type"] == "pong"
        await echo(conn)
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_nul_bytes_and_invalid_utf8_in_text_frames(box: Box, kind: str) -> None:
    async with box.pty(kind) as conn:
        await conn.send(json.dumps({"type": "stdin", "data": "echo nul\x00-$((1+2))\n"}))
        await conn.send("\x00\x00{}")  # NUL bytes are valid UTF-8, but not JSON
        assert (await next_control(conn))["type"] == "error"
        await conn.send(b"\x15echo after-nul-$((2+3))\n")
        await read_until(conn, b"after-nul-5")
        # the library refuses to encode invalid UTF-8 but sends the bytes as given
        await conn.send(b'{"type": "ping", "x": "\xff\xfe\xc0"}', text=True)
        code, _ = await closed_with(conn)
    # granian drops such a frame before the app sees it and closes without a status (1005);
    # 1007 "invalid frame payload data" would be as good
    assert code in (1005, 1007)
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_frames_before_the_handshake_is_answered_and_after_close(box: Box, kind: str) -> None:
    tag = secrets.token_hex(3)
    early = frame(BINARY, f"echo early-$((1+1))-{tag}\n".encode()) + frame(TEXT, b"junk")
    raw = await Raw.open(box.ws(box.path(kind)), box.headers, early=early)
    try:
        assert raw.status == 101
        seen, errors = b"", list[dict]()
        async with asyncio.timeout(20):
            while f"early-2-{tag}".encode() not in seen or not errors:
                got = await raw.recv()
                assert got is not None
                seen += got[1] if got[0] == BINARY else b""
                errors += [json.loads(got[1])] if got[0] == TEXT and b"error" in got[1] else []
        assert errors[0]["message"] == "text frames are JSON objects"
        # after the client's close, nothing it sends is typed
        after = frame(BINARY, f"touch /tmp/after-{tag}\n".encode())
        await raw.send(frame(CLOSE, b"\x03\xe8bye"), after, frame(TEXT, b"junk"))
        async with asyncio.timeout(20):
            assert await raw.close_code() in (None, (1000, "bye"), (1000, ""))
    finally:
        await raw.aclose()
    await asyncio.sleep(0.5)
    assert not await holds(box, kind, f"test -e /tmp/after-{tag}")
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_flood_of_small_frames_and_a_resize_storm(box: Box, kind: str) -> None:
    async with box.pty(kind, max_queue=None) as conn:
        for _ in range(2000):
            await conn.send(b"x")
        for _ in range(300):
            await conn.send("{")
        for i in range(300):
            await conn.send(_resize(cols=20 + i % 200, rows=5 + i % 50))
        await conn.send(_resize(cols=77, rows=33))
        errors = 0
        while errors < 300:
            errors += (await next_control(conn, timeout=60))["type"] == "error"
        await conn.send(b"\x15stty size\n")
        await read_until(conn, b"33 77", timeout=60)
        await echo(conn)
    await still_serves(box, kind)


async def _terminal_pids(conn: ClientConnection) -> tuple[str, str]:
    """(the shell's pid, the pid of a sleep it started in the background)."""
    tag = secrets.token_hex(3)
    await conn.send(f'sleep 1000 & echo {tag}-$$-$!-{tag}""x\n'.encode())  # echoed back without ""
    seen = await read_until(conn, f"-{tag}x".encode())
    shell, child = seen.rsplit(f"-{tag}x".encode(), 1)[0].rsplit(f"{tag}-".encode(), 1)[1].split(b"-")
    return shell.decode(), child.decode()


@pytest.mark.parametrize("kind", KINDS)
async def test_the_shell_exiting_sends_exit_then_closes_with_1000(box: Box, kind: str) -> None:
    async with box.pty(kind) as conn:
        await echo(conn)
        await conn.send(b"exit\n")
        assert (await next_control(conn))["type"] == "exit"
        assert await closed_with(conn, timeout=10) == (1000, "")
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_two_connections_are_two_shells_and_each_dies_with_its_socket(box: Box, kind: str) -> None:
    async with box.pty(kind) as one, box.pty(kind) as two:
        first, second = await _terminal_pids(one), await _terminal_pids(two)
        assert first[0] != second[0]
        await echo(one)
        await echo(two)
        await one.send(b"\x03")  # Ctrl-C to one leaves the other alone
        await echo(two)
    pids = " ".join([*first, *second])
    alive = f"for p in {pids}; do test -d /proc/$p && exit 0; done; false"
    for _ in range(20):  # the kill follows the close by a moment
        if not await holds(box, kind, f"({alive})"):
            break
        await asyncio.sleep(0.5)
    else:
        pytest.fail(f"a terminal's processes outlived it: {pids}")
    await still_serves(box, kind)


@pytest.mark.parametrize("kind", KINDS)
async def test_strangers_and_bad_tokens_are_refused(box: Box, kind: str, accounts: AccountService) -> None:
    target = box.session if kind == "session" else box.sandbox
    elsewhere = box.sandbox if kind == "session" else box.session
    mine = await accounts.authenticate(box.headers["Authorization"])
    stranger = await _headers(accounts)
    theirs = await accounts.authenticate(stranger["Authorization"])
    tokens = {
        "another terminal's": (await accounts.issue_token(mine, f"pty:{elsewhere}"))[0],
        "another tenant's": (await accounts.issue_token(theirs, f"pty:{target}"))[0],
        "expired": (await accounts.issue_token(mine, f"pty:{target}", ttl=-5))[0],
        "empty": "slt_",
        "garbage": "slt_not.a.token",
        "unprefixed": "x" * 100,
        "too long": "slt_" + "A" * 400,
        "non-ascii": "slt_%C3%A9%E2%80%8B",
    }
    statuses = {
        name: await refused(box.ws(f"{box.path(kind)}?token={token}")) for name, token in tokens.items()
    }
    statuses["stranger's key"] = await refused(box.ws(box.path(kind)), stranger)
    statuses["no key"] = await refused(box.ws(box.path(kind)))
    statuses["bad size"] = await refused(box.ws(box.path(kind) + "?cols=0&rows=abc"), box.headers)
    # a refusal before the handshake is accepted reaches the client as HTTP 403 (granian)
    assert set(statuses.values()) == {403}, statuses
    # a NUL in the URL is closed as a policy violation before the handler runs
    raw = await Raw.open(box.ws(box.path(kind) + "?token=slt_%00"), box.headers)
    await raw.aclose()
    assert raw.status in (400, 403)
    await still_serves(box, kind)


async def _process(box: Box, command: str) -> str:
    resp = await box.http.post(f"/v1/sessions/{box.session}/processes", json={"command": command})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def test_process_stream_ignores_what_the_client_sends_and_delivers_everything(
    box: Box, accounts: AccountService
) -> None:
    pid = await _process(box, "sleep 2; seq 1 20000")
    stream = box.ws(f"/v1/sessions/{box.session}/processes/{pid}/stream")
    expected = "".join(f"{i}\n" for i in range(1, 20001)).encode()
    async with websockets.connect(stream, additional_headers=box.headers, max_size=None) as conn:
        junks: list[str | bytes] = [*BAD_CONTROL, "\x00", b"\x00\xff", b"", _resize(cols=9, rows=9)]
        for junk in junks:
            await conn.send(junk)
        for _ in range(1000):
            await conn.send(b"k")
        received, end = bytearray(), None
        async with asyncio.timeout(60):
            async for message in conn:
                if isinstance(message, str):
                    end = json.loads(message)
                    break
                received += message
    assert bytes(received) == expected and end is not None and end["type"] == "exit", end
    for payload in (b"x" * BIG, "x" * BIG):  # while the stream waits on a process that runs on
        sleeper = await _process(box, "sleep 30")
        url = box.ws(f"/v1/sessions/{box.session}/processes/{sleeper}/stream")
        async with websockets.connect(url, additional_headers=box.headers, compression=None) as conn:
            await conn.send(payload)
            code, reason = await closed_with(conn)
        assert code == 1009 and "limited to" in reason
        await box.http.post(f"/v1/sessions/{box.session}/processes/{sleeper}/kill")
    async with websockets.connect(stream, additional_headers=box.headers) as conn:
        await conn.send(b'{"x": "\xff"}', text=True)
        assert (await closed_with(conn))[0] in (1005, 1007)
    # a refusal before the handshake is accepted reaches the client as HTTP 403 (granian)
    assert await refused(stream, await _headers(accounts)) == 403
    assert await refused(stream) == 403
    async with websockets.connect(stream + "?offset=19", additional_headers=box.headers) as conn:
        async with asyncio.timeout(20):  # a fresh stream still works, and ends with a close
            rest = b"".join([m async for m in conn if isinstance(m, bytes)])
    assert rest == expected[19:] and conn.close_code == 1000
    assert not box.tracebacks(), box.tracebacks()
