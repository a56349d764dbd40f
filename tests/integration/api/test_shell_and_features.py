"""The built-in features through the API: the persistent shell, files and python."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import pytest

from tests.conftest import PYTHON
from tests.integration.conftest import Api


@pytest.fixture
async def sid(api: Api) -> AsyncIterator[str]:
    env = await api.env(images=[PYTHON])
    session = await api.session(env["name"])
    yield session["id"]
    await api.end(session["id"])


async def test_cwd_and_exported_variables_persist(api: Api, sid: str) -> None:
    first = await api.sh(sid, "cd /tmp; export A=1")
    assert first["exit_code"] == 0
    second = await api.sh(sid, "pwd; echo $A")
    assert second["stdout"] == "/tmp\n1\n"


async def test_a_failing_command_returns_its_code_and_keeps_the_session(api: Api, sid: str) -> None:
    assert (await api.sh(sid, "exit 3"))["exit_code"] == 3
    assert (await api.sh(sid, "false"))["exit_code"] == 1
    after = await api.sh(sid, "echo alive")
    assert (after["exit_code"], after["stdout"]) == (0, "alive\n")


async def test_timeout_returns_quickly_with_partial_output(api: Api, sid: str) -> None:
    started = time.monotonic()
    res = await api.sh(sid, "echo before; sleep 100", timeout=1)
    assert time.monotonic() - started < 2
    assert res["timed_out"] is True and res["exit_code"] is None
    assert res["stdout"] == "before\n"
    assert "sleep 100" not in (await api.sh(sid, "ps -eo args"))["stdout"]


async def test_silence_timeout_kills_a_quiet_command(api: Api, sid: str) -> None:
    res = await api.sh(sid, "echo a; sleep 1; echo b; sleep 60", timeout=30, silence_timeout=1.5)
    assert res["timed_out"] and res["silence_timed_out"]
    assert res["stdout"] == "a\nb\n"


async def test_large_output_comes_back_exactly(api: Api, sid: str) -> None:
    res = await api.sh(sid, "yes | head -c 5000000")
    assert len(res["stdout"]) == 5_000_000 and not res["truncated"]
    assert res["stdout"] == "y\n" * 2_500_000


async def test_output_without_newline_and_binary_output_are_exact(api: Api, sid: str) -> None:
    assert (await api.sh(sid, "printf 'no newline'"))["stdout"] == "no newline"
    res = await api.sh(sid, "printf '\\377\\000\\001'; printf 'e' >&2")
    assert res["encoding"] == "base64"
    assert base64.b64decode(res["stdout"]) == b"\xff\x00\x01"
    assert base64.b64decode(res["stderr"]) == b"e"


async def test_concurrent_commands_never_interleave(api: Api, sid: str) -> None:
    results = await asyncio.gather(
        api.call(sid, "shell", "run", command="for i in 1 2 3; do echo A$i; sleep 0.2; done"),
        api.call(sid, "shell", "run", command="for i in 1 2 3; do echo B$i; sleep 0.2; done"),
    )
    outputs = set()
    for resp in results:
        if resp.status_code == 409:  # rejected clearly while the other one runs
            assert resp.json()["code"] == "conflict"
        else:
            assert resp.status_code == 200
            outputs.add(resp.json()["stdout"])
    assert outputs and outputs <= {"A1\nA2\nA3\n", "B1\nB2\nB3\n"}


async def test_python_returns_output_and_the_last_value(api: Api, sid: str) -> None:
    resp = await api.call(
        sid, "python", "run", code="import sys\nprint('hi')\nprint('e', file=sys.stderr)\n6 * 7"
    )
    body = resp.json()
    assert resp.status_code == 200, body
    assert (body["stdout"], body["stderr"], body["value"]) == ("hi\n", "e\n", "42")
    none = (await api.call(sid, "python", "run", code="x = 1")).json()
    assert none["value"] is None and none["exit_code"] == 0
    err = (await api.call(sid, "python", "run", code="1/0")).json()
    assert err["exit_code"] == 1 and "ZeroDivisionError" in err["stderr"]


async def test_files_feature_covers_every_operation(api: Api, sid: str) -> None:
    async def files(activity: str, **args: object) -> dict:
        resp = await api.call(sid, "files", activity, **args)
        assert resp.status_code == 200, resp.text
        return resp.json()

    await files("write", path="a/b/c.txt", content="hello")
    assert (await files("read", path="a/b/c.txt"))["content"] == "hello"
    blob = base64.b64encode(b"\x00\xffraw").decode()
    await files("write", path="bin.dat", content=blob, encoding="base64")
    assert (await files("read", path="bin.dat"))["content"] == blob
    assert (await files("stat", path="a/b/c.txt"))["type"] == "file"
    await files("mkdir", path="d/e")
    await files("move", source="a/b/c.txt", destination="d/e/moved.txt")
    listing = {e["name"]: e for e in (await files("list", path="d/e"))["entries"]}
    assert listing["moved.txt"] == {"name": "moved.txt", "type": "file", "size": 5}
    await files("remove", path="d")
    missing = await api.call(sid, "files", "stat", path="d")
    assert missing.status_code == 404


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "link/passwd"])
async def test_files_feature_stays_in_the_workspace(api: Api, sid: str, path: str) -> None:
    await api.sh(sid, "ln -sf /etc /workspace/link")
    for activity, args in [("read", {}), ("stat", {}), ("list", {}), ("remove", {})]:
        resp = await api.call(sid, "files", activity, path=path, **args)
        assert resp.status_code == 422, (activity, resp.text)
        assert resp.json()["code"] == "path_outside_workspace"


async def test_bad_activity_arguments_are_422_naming_the_field(api: Api, sid: str) -> None:
    resp = await api.call(sid, "shell", "run", command="true", timeout=-1)
    assert resp.status_code == 422 and resp.json()["field"] == "timeout"
    resp = await api.call(sid, "shell", "run", nonsense=1)
    assert resp.status_code == 422


async def test_unknown_features_and_activities_are_404(api: Api, sid: str) -> None:
    assert (await api.call(sid, "nope", "run")).status_code == 404
    assert (await api.call(sid, "shell", "nope")).status_code == 404


async def test_activities_are_recorded_with_errors(api: Api, sid: str) -> None:
    await api.sh(sid, "echo one")
    await api.call(sid, "files", "read", path="missing.txt")
    resp = await api.client.get(f"/v1/sessions/{sid}/activities", headers=api.h)
    rows = resp.json()
    names = [(r["feature"], r["name"], r["error_code"]) for r in rows]
    assert ("shell", "run", None) in names
    assert ("files", "read", "not_found") in names
    assert all(r["duration_ms"] >= 0 for r in rows)
