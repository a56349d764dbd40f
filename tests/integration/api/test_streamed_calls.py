"""Streamed calls on real Docker: a command's stdin and a file's content go in the body after
the JSON arguments (never inside a JSON body, whose limit is far smaller), a file comes out raw,
byte for byte; malformed framing is a 4xx, never a 500; the file limit holds while streaming."""

from __future__ import annotations

import base64
import json
import secrets

import pytest
from litestar.testing import AsyncTestClient

from sandlot.settings import Settings
from tests.integration.conftest import Api

pytestmark = [pytest.mark.docker, pytest.mark.postgres]


def streamed(args: dict, data: bytes) -> tuple[dict[str, int], bytes]:
    head = json.dumps(args).encode()
    return {"args_bytes": len(head)}, head + data


async def call_streamed(api: Api, session_id: str, feature: str, activity: str, args: dict, data: bytes):
    params, body = streamed(args, data)
    return await api.client.post(
        f"/v1/sessions/{session_id}/features/{feature}/{activity}/stream",
        params=params,
        content=body,
        headers={**api.h, "content-type": "application/octet-stream"},
    )


async def test_stdin_and_files_many_times_the_json_limit_round_trip(api: Api, app_settings: Settings) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    stdin = secrets.token_bytes(5 << 20)
    assert len(stdin) > 50 * app_settings.max_request_bytes
    resp = await call_streamed(api, s["id"], "shell", "exec", {"argv": ["cat"]}, stdin)
    assert resp.status_code == 200, resp.text
    out = resp.json()
    assert out["exit_code"] == 0 and not out["truncated"]
    assert base64.b64decode(out["stdout"]) == stdin

    content = secrets.token_bytes(12 << 20)
    resp = await call_streamed(api, s["id"], "files", "write", {"path": "d/big.bin"}, content)
    assert resp.status_code == 200 and resp.json()["size"] == len(content), resp.text
    got = await api.client.get(f"/v1/sessions/{s['id']}/files", params={"path": "d/big.bin"}, headers=api.h)
    assert got.status_code == 200 and got.headers["content-length"] == str(len(content))
    assert got.content == content
    records = (await api.client.get(f"/v1/sessions/{s['id']}/activities", headers=api.h)).json()
    assert {(r["feature"], r["name"]) for r in records} >= {("shell", "exec"), ("files", "write")}
    await api.end(s["id"])


async def test_the_sandbox_exec_route_streams_stdin_too(api: Api) -> None:
    made = await api.client.post("/v1/sandboxes", json={}, headers=api.h)
    sid = made.json()["id"]
    params, body = streamed({"command": ["wc", "-c"]}, b"z" * (3 << 20))
    resp = await api.client.post(
        f"/v1/sandboxes/{sid}/exec/stream", params=params, content=body, headers=api.h
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["stdout"].strip() == str(3 << 20)
    params, body = streamed({"command": ["cat"], "stdin": "twice"}, b"x")
    resp = await api.client.post(
        f"/v1/sandboxes/{sid}/exec/stream", params=params, content=body, headers=api.h
    )
    assert resp.status_code == 422 and resp.json()["field"] == "stdin"
    assert (await api.client.delete(f"/v1/sandboxes/{sid}", headers=api.h)).status_code == 204


async def test_malformed_streamed_calls_are_refused_with_a_reason(
    api: Api, client: AsyncTestClient, app_settings: Settings
) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    url = f"/v1/sessions/{s['id']}/features/shell/exec/stream"
    cases = [
        ({"args_bytes": 50}, b'{"argv": ["cat"]}'),  # longer than the body
        ({"args_bytes": 5}, b"not json at all"),
        ({"args_bytes": 2}, b"[]data"),
        ({"args_bytes": 4000}, b"[" * 4000),  # nested past any parser's depth
        ({"args_bytes": -1}, b"{}"),
        ({}, b"{}"),
    ]
    for params, body in cases:
        resp = await client.post(url, params=params, content=body, headers=api.h)
        assert resp.status_code in (400, 422), (params, body[:20], resp.status_code, resp.text)
    for feature, activity, args in (
        ("shell", "run", {"command": "cat"}),  # takes no stream
        ("shell", "exec", {"argv": ["cat"], "stdin": "also here"}),
        ("files", "write", {"path": "f", "content": "also here"}),
    ):
        resp = await call_streamed(api, s["id"], feature, activity, args, b"data")
        assert resp.status_code == 422, resp.text
    too_long = json.dumps({"argv": ["x" * (app_settings.max_arguments_bytes + 1)]}).encode()
    resp = await client.post(url, params={"args_bytes": len(too_long)}, content=too_long, headers=api.h)
    assert resp.status_code == 413 and resp.json()["code"] == "payload_too_large"
    over = await call_streamed(
        api, s["id"], "files", "write", {"path": "f"}, b"x" * (app_settings.max_file_bytes + 1)
    )
    assert over.status_code == 413 and over.json()["code"] == "payload_too_large"
    assert (await api.sh(s["id"], "ls -A"))["stdout"] == ""  # nothing was written
    await api.end(s["id"])


async def test_a_raw_file_read_keeps_the_files_checks(api: Api) -> None:
    env = await api.env(pool_size=0)
    s = await api.session(env["name"])
    await api.sh(s["id"], "mkdir dir && ln -s /etc/passwd out && echo hi > f && chmod 000 f")
    url = f"/v1/sessions/{s['id']}/files"
    for path, status, code, reason in (
        ("missing", 404, "not_found", "not_found"),
        ("dir", 422, "invalid_input", "is_a_directory"),
        ("f", 422, "invalid_input", "permission_denied"),
        ("out", 422, "path_outside_workspace", "outside_workspace"),
        ("../etc/passwd", 422, "path_outside_workspace", None),
    ):
        resp = await api.client.get(url, params={"path": path}, headers=api.h)
        assert resp.status_code == status and resp.json()["code"] == code, (path, resp.text)
        assert resp.json().get("reason") == reason, (path, resp.text)
    await api.end(s["id"])


async def test_the_feature_catalogue_says_which_argument_streams(api: Api) -> None:
    found = (await api.client.get("/v1/environments/-/features", headers=api.h)).json()
    streamed = {f["name"]: f["streamed"] for f in found}
    assert streamed["shell"] == {"exec": "stdin"} and streamed["files"] == {"write": "content"}
    assert streamed["python"] == {}
