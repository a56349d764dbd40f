"""The OpenAI Agents SDK's own sandbox tests, run on Sandlot sessions through the provider
(``sandlot_client.openai_agents``) against a live server.

The tests come from the SDK's source distribution on PyPI (the installed version, its digest
checked against PyPI's, kept in a cache), and run in a pytest of their own, in that tree: its
``tests`` package would clash with ours. ``agents_upstream/sandlot_upstream_plugin.py`` makes
their local client a Sandlot one. Chosen: the tests that build a session through that client
and make no host assumption the plugin cannot lift (the rest of the suite drives fakes, or
reads the host's files, or checks the local backend's own name and exit codes)."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import secrets
import shutil
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from sandlot.services.accounts import AccountService
from sandlot_client import Sandlot

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(900)]

PLUGIN_DIR = Path(__file__).parent / "agents_upstream"
IMAGE = "sandlot/python:3"
CASES = [
    "tests/sandbox/test_run_cwd.py::test_concurrent_runs_scope_relative_paths_with_shared_live_session",
    "tests/sandbox/test_run_cwd.py::test_resumed_run_rebinds_cwd_to_pending_sandbox_tool",
    "tests/sandbox/test_run_cwd.py::test_resumed_apply_patch_uses_current_run_cwd",
    "tests/sandbox/test_runtime.py::test_unix_local_read_and_write_reject_paths_outside_workspace_root",
    "tests/sandbox/test_runtime.py::test_unix_local_rm_recursive_ignores_missing_paths",
    "tests/sandbox/test_runtime.py::test_unix_local_rm_non_recursive_still_errors_for_missing_paths",
    "tests/sandbox/test_runtime.py::test_runner_serializes_unique_sandbox_resume_keys_for_duplicate_agent_names",
    "tests/sandbox/test_runtime.py::test_runner_restores_duplicate_name_sandbox_sessions_after_json_roundtrip",
    "tests/sandbox/test_unix_local.py::TestUnixLocalPty::test_pty_exec_write_poll_and_unknown_session_errors",
    "tests/sandbox/test_unix_local.py::TestUnixLocalPty::test_pty_ctrl_c_interrupts_long_running_process",
    "tests/sandbox/test_unix_local.py::TestUnixLocalPty::test_non_tty_pty_session_rejects_stdin_and_can_still_be_polled",
    "tests/sandbox/test_unix_local.py::TestUnixLocalPty::test_stop_terminates_active_pty_sessions",
]
# stops its session (the SDK's stop: a snapshot, no shutdown) and never deletes it: its Sandlot
# session stays open, as a program doing the same would leave it, and is ended by the test here
STOPS_ONLY = "tests/sandbox/test_unix_local.py::TestUnixLocalPty::test_stop_terminates_active_pty_sessions"


def sdk_tests() -> Path:
    """The installed SDK's sdist tree (its tests and pytest configuration), fetched once."""
    release = version("openai-agents")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sandlot-tests"
    tree = cache / f"openai_agents-{release}"
    if (tree / "pyproject.toml").is_file():
        return tree
    index = httpx.get(  # the simple index (PEP 691), the API pip and uv use
        "https://pypi.org/simple/openai-agents/",
        headers={"Accept": "application/vnd.pypi.simple.v1+json"},
        timeout=60,
        follow_redirects=True,
    ).raise_for_status()
    (sdist,) = [f for f in index.json()["files"] if f["filename"] == f"openai_agents-{release}.tar.gz"]
    body = httpx.get(sdist["url"], timeout=120, follow_redirects=True).raise_for_status().content
    assert hashlib.sha256(body).hexdigest() == sdist["hashes"]["sha256"], "the sdist is not PyPI's"
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / f".{tree.name}-{secrets.token_hex(4)}"
    try:
        with tarfile.open(fileobj=io.BytesIO(body)) as tar:
            top = f"openai_agents-{release}/"
            keep = (top + "tests/", top + "pyproject.toml")
            wanted = [m for m in tar.getmembers() if m.name.startswith(keep)]
            tar.extractall(partial, members=wanted, filter="data")
        shutil.rmtree(tree, ignore_errors=True)  # a tree without its pyproject.toml is no tree
        (partial / top).rename(tree)  # whole or not at all: a run killed midway leaves no tree
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return tree


async def test_the_agents_sdk_own_sandbox_tests_pass_on_sandlot(
    live_server: str, accounts: AccountService, tmp_path: Path
) -> None:
    tree = await asyncio.to_thread(sdk_tests)
    tenant = await accounts.create_tenant(f"oau-{secrets.token_hex(4)}")
    key = (await accounts.create_key(tenant.id)).plaintext
    environment = f"oau-{secrets.token_hex(3)}"
    with Sandlot(live_server, key) as admin:
        admin.create_environment(environment, [IMAGE], pool_size=[1, 4])
    (tmp_path / "home").mkdir()
    env = {
        **os.environ,
        "SANDLOT_URL": live_server,
        "SANDLOT_API_KEY": key,
        "SANDLOT_ENVIRONMENT": environment,
        "PYTHONPATH": str(PLUGIN_DIR),
        "HOME": str(tmp_path / "home"),  # the SDK keeps its local snapshots there
    }
    async with httpx.AsyncClient(base_url=live_server, headers={"Authorization": f"Bearer {key}"}) as http:
        rest = [case for case in CASES if case != STOPS_ONLY]
        # one run for these (test_resumed_apply_patch_uses_current_run_cwd is two cases)
        await run_upstream(tree, env, rest, passed=len(rest) + 1)
        assert await active(http) == [], "the SDK's tests left sessions"
        await run_upstream(tree, env, [STOPS_ONLY], passed=1)
        (left,) = await active(http)
        (await http.delete(f"/v1/sessions/{left}")).raise_for_status()


async def run_upstream(tree: Path, env: dict[str, str], cases: list[str], *, passed: int) -> None:
    argv = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "sandlot_upstream_plugin"]
    argv += ["-p", "no:cacheprovider", "-o", "timeout=120", *cases]
    run = await asyncio.to_thread(
        subprocess.run, argv, cwd=tree, env=env, capture_output=True, text=True, timeout=400
    )
    report = run.stdout[-6000:] + run.stderr[-2000:]
    assert run.returncode == 0, report
    assert f"{passed} passed" in run.stdout, report


async def active(http: httpx.AsyncClient) -> list[str]:
    found = (await http.get("/v1/sessions", params={"status": "active"})).raise_for_status().json()
    return [s["id"] for s in found]
