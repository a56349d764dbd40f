"""The ``sandlot`` command as a user runs it: real processes, an embedded SQLite store."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from tests.conftest import INSTANCE
from tests.integration.servers import Server, free_port


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SANDLOT_DATA_DIR": str(tmp_path / "data"),
        "SANDLOT_INSTANCE": f"{INSTANCE}-cli",
        "SANDLOT_DATABASE_URL": "",
    }


def sandlot(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandlot", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_tenants_and_keys_with_json_output(env: dict[str, str]) -> None:
    made = sandlot(env, "tenants", "create", "acme", "--max-sandboxes", "3", "--json")
    assert made.returncode == 0, made.stderr
    tenant = json.loads(made.stdout)
    assert tenant["name"] == "acme" and tenant["max_sandboxes"] == 3
    listed = json.loads(sandlot(env, "tenants", "list", "--json").stdout)
    assert "acme" in {t["name"] for t in listed}

    piped = sandlot(env, "keys", "create", "--tenant", "acme")
    assert piped.returncode == 0, piped.stderr
    assert re.fullmatch(r"sl_[0-9a-f]{8}_[\w-]+\n", piped.stdout), piped.stdout

    full = json.loads(sandlot(env, "keys", "create", "--tenant", "acme", "--json").stdout)
    assert full["key"].startswith("sl_") and full["scopes"] == ["sandboxes:read", "sandboxes:write"]
    keys = json.loads(sandlot(env, "keys", "list", "--tenant", "acme", "--json").stdout)
    assert len(keys) == 2 and all("key" not in k and "digest" not in k for k in keys)

    revoked = json.loads(sandlot(env, "keys", "revoke", full["id"], "--json").stdout)
    assert revoked["revoked_at"] is not None

    op = json.loads(sandlot(env, "keys", "create", "--operator", "--json").stdout)
    assert "operator" in op["scopes"]
    scraper = json.loads(sandlot(env, "keys", "create", "--scope", "metrics:read", "--json").stdout)
    assert scraper["scopes"] == ["metrics:read"] and scraper["tenant_id"] == op["tenant_id"]
    alone = sandlot(env, "keys", "create", "--scope", "sandboxes:read")
    assert alone.returncode != 0 and "--tenant is required" in alone.stderr


def test_tenant_quotas_are_set_at_creation_and_changed_later(env: dict[str, str]) -> None:
    made = sandlot(
        env, "tenants", "create", "quota-co", "--max-sessions", "3", "--max-snapshot-mb", "50", "--json"
    )
    assert made.returncode == 0, made.stderr
    tenant = json.loads(made.stdout)
    assert (tenant["max_sessions"], tenant["max_snapshot_mb"], tenant["max_ttl_seconds"]) == (3, 50, None)
    changed = sandlot(
        env, "tenants", "set", "quota-co", "--max-ttl-seconds", "600", "--max-cpus", "1.5", "--json"
    )
    assert changed.returncode == 0, changed.stderr
    after = json.loads(changed.stdout)
    assert (after["max_ttl_seconds"], after["max_cpus"], after["max_sessions"]) == (600, 1.5, 3)
    cleared = json.loads(
        sandlot(env, "tenants", "set", "quota-co", "--max-ttl-seconds", "0", "--json").stdout
    )
    assert cleared["max_ttl_seconds"] is None
    missing = sandlot(env, "tenants", "set", "nobody", "--max-sessions", "1")
    assert missing.returncode != 0 and "not_found" in missing.stderr and "Traceback" not in missing.stderr


def test_errors_are_messages_not_tracebacks(env: dict[str, str]) -> None:
    sandlot(env, "tenants", "create", "dup")
    again = sandlot(env, "tenants", "create", "dup")
    assert again.returncode != 0
    assert "conflict" in again.stderr and "Traceback" not in again.stderr
    missing = sandlot(env, "keys", "create", "--tenant", "nobody")
    assert missing.returncode != 0 and "not_found" in missing.stderr


def test_openapi_document_is_written(env: dict[str, str], tmp_path: Path) -> None:
    out = tmp_path / "openapi.json"
    done = sandlot(env, "openapi", "--output", str(out))
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["info"]["title"] == "Sandlot"
    for path in ("/v1/sandboxes", "/v1/sandboxes/{sandbox_id}/exec", "/v1/sandboxes/{sandbox_id}/files"):
        assert path in doc["paths"]


@pytest.fixture
def served(env: dict[str, str], request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``sandlot serve`` as the README's quickstart runs it; yields (url, operator key)."""
    settings = {"SANDLOT_RUNTIME": request.param}
    server = Server(
        settings, tmp_path / "serve.log", environ=env, args=["--json"], pipe_stdout=True, ready=None, grace=15
    )
    with server:
        info = json.loads(server.stdout.readline())  # printed once it answers
        assert info["url"] == server.url
        assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200
        yield server.url, info["operator_key"]


@pytest.mark.parametrize("served", ["auto", "local"], indirect=True)
def test_serve_answers_and_runs_a_sandbox(served: tuple[str, str]) -> None:
    url, key = served
    assert key and key.startswith("sl_")
    h = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=h, timeout=60) as http:
        ready = http.get("/readyz").json()
        assert ready["status"] == "ready"
        sandbox = http.post("/v1/sandboxes", json={}).json()
        assert sandbox["status"] == "ready", sandbox
        res = http.post(f"/v1/sandboxes/{sandbox['id']}/exec", json={"command": "echo hi"}).json()
        assert (res["exit_code"], res["stdout"]) == (0, "hi\n")
        assert http.delete(f"/v1/sandboxes/{sandbox['id']}").status_code == 204
        assert http.get("/openapi/openapi.json").status_code == 200


def _serve(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandlot", "serve", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def test_an_unreachable_docker_chosen_explicitly_is_one_clear_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    # the report: with no socket aiodocker asserted, nothing caught it, and the worker died
    # after "listening" and a key had been printed
    env = {**env, "SANDLOT_RUNTIME": "docker", "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    done = _serve(env, "--port", str(free_port()))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr and "Operator key" not in done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "no Docker engine answers" in errors[0], done.stderr


def test_a_start_that_cannot_bind_says_why_and_prints_no_key(env: dict[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        done = _serve({**env, "SANDLOT_RUNTIME": "local"}, "--port", str(taken.getsockname()[1]))
    assert done.returncode != 0
    assert "listening" not in done.stdout and "Operator key" not in done.stdout
    assert "Sandlot cannot start" in done.stderr and "in use" in done.stderr
    assert "Stack backtrace" not in done.stderr


def test_auto_without_docker_serves_on_the_local_runtime_and_says_so_once(
    env: dict[str, str], tmp_path: Path
) -> None:
    settings = {"SANDLOT_RUNTIME": "auto", "DOCKER_HOST": f"unix://{tmp_path}/none.sock"}
    server = Server(
        settings,
        tmp_path / "serve.log",
        environ=env,
        port_as_arg=True,
        pipe_stdout=True,
        ready=None,
        grace=15,
    )
    with server:
        assert server.stdout.readline().startswith("Sandlot listening on")
        assert "Operator key" in server.stdout.readline()
        assert httpx.get(f"{server.url}/readyz", timeout=5).json()["runtime"] == "local"
    said = (tmp_path / "serve.log").read_text()
    assert said.count("no Docker engine answers") == 1, said


@pytest.mark.timeout(180)
@pytest.mark.parametrize("served", ["local"], indirect=True)
def test_a_background_process_on_the_local_runtime_starts_at_once_and_streams_until_killed(
    served: tuple[str, str],
) -> None:
    # granian serves on uvloop: the start used to last until the command ended (a 502 after 15 s)
    url, key = served
    h = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=h, timeout=60) as http:
        assert http.post("/v1/environments", json={"name": "lt", "images": ["local"]}).status_code == 201
        sid = http.post("/v1/sessions", json={"environment": "lt"}).json()["id"]
        began = time.monotonic()
        started = http.post(f"/v1/sessions/{sid}/processes", json={"command": "echo up; sleep 30"})
        assert started.status_code == 201, started.text
        assert time.monotonic() - began < 5
        proc = f"/v1/sessions/{sid}/processes/{started.json()['id']}"
        ws_url = f"ws{url.removeprefix('http')}{proc}/stream"
        with connect(ws_url, additional_headers=h, open_timeout=30) as ws:
            assert ws.recv(timeout=10) == b"up\n"  # live, while it runs
            assert http.get(proc).json()["status"] == "running"
            killed = http.post(f"{proc}/kill")
            assert killed.json()["status"] == "killed", killed.text
            end = json.loads(ws.recv(timeout=10))
    assert (end["type"], end["status"], end["offset"]) == ("exit", "killed", 3)
