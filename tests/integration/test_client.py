"""The Python client (clients/python) against a live server on real Docker: every hand-written
method, streaming with reconnect, retries on a full pool, resume after the server restarted,
the generated layer being current, and a clean install without the server package."""

from __future__ import annotations

import asyncio
import filecmp
import io
import json
import secrets
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from sandlot_client import (
    AsyncSandlot,
    ClientClosed,
    Conflict,
    InvalidInput,
    NotAuthenticated,
    NotFound,
    Sandlot,
    output_bytes,
)
from tests.integration.conftest import NewTenant, key_of
from tests.integration.servers import restartable_server

ROOT = Path(__file__).resolve().parents[2]


def test_the_generated_client_is_current(tmp_path: Path) -> None:
    out = tmp_path / "_api"
    subprocess.run(["bash", "scripts/gen-client.sh", str(out)], cwd=ROOT, check=True, capture_output=True)
    checked_in = ROOT / "clients/python/sandlot_client/_api"

    def differences(cmp: filecmp.dircmp[str]) -> list[str]:
        found = [*cmp.left_only, *cmp.right_only, *cmp.diff_files]
        for sub in cmp.subdirs.values():
            found += differences(sub)
        return found

    stale = differences(filecmp.dircmp(out, checked_in, ignore=["__pycache__"]))
    assert not stale, f"run scripts/gen-client.sh; out of date: {stale}"


async def test_every_method_of_the_blocking_client(live_server: str, new_tenant: NewTenant) -> None:
    key = key_of(await new_tenant())

    def scenario() -> None:
        with Sandlot(live_server, key) as client:
            name = f"py-{secrets.token_hex(3)}"
            env = client.create_environment(name, ["sandlot/python:3"], pool_size=0)
            assert env["name"] == name
            with client.session(environment=name, files={"seed.txt": "seed"}) as s:
                assert s.status == "active" and s.sandbox_id
                assert s.shell.run("cat seed.txt; cd /tmp; export Z=9")["stdout"] == "seed"
                assert s.shell.run("pwd; echo $Z")["stdout"] == "/tmp\n9\n"
                s.files.write("bin.dat", b"\x00\xff\x01")
                assert s.files.read("bin.dat") == b"\x00\xff\x01"
                assert [e["name"] for e in s.files.list(".")["entries"]] == ["bin.dat", "seed.txt"]
                assert s.python.run("x = 6\nx * 7")["value"] == "42"
                ran = s.shell.exec(["sh", "-c", 'pwd; cat; printf "\\377" >&2'], stdin=b"in\x00", cwd="/tmp")
                assert output_bytes(ran) == (b"/tmp\nin\x00", b"\xff") and ran["exit_code"] == 0
                archive = s.export_workspace()
                with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                    assert {"seed.txt", "bin.dat"} <= set(tar.getnames())
                s.files.remove("bin.dat")
                assert s.import_workspace(archive)["size"] == len(archive)
                assert s.files.read("bin.dat") == b"\x00\xff\x01"

                proc = s.processes.start("for i in $(seq 1 20000); do echo $i; done")
                stream = proc.stream()
                got = bytearray()
                for chunk in stream:
                    got += chunk
                    if len(got) > 20_000 and stream.reconnects == 0:
                        stream.drop()  # as a network failure would
                assert bytes(got) == "".join(f"{i}\n" for i in range(1, 20001)).encode()
                assert stream.reconnects == 1 and stream.exit and stream.exit["exit_code"] == 0
                assert proc.wait()["status"] == "exited" and proc.output(0, 6) == b"1\n2\n3\n"
                sleeper = s.processes.start("sleep 300")
                assert sleeper.kill()["status"] == "killed"
                assert len(s.processes.list()) == 2
                asker = s.processes.start("printf 'name? '; read n; echo hi $n", stdin=True)
                asker.write("ann\n", eof=True)
                assert asker.wait()["exit_code"] == 0 and asker.output() == b"name? hi ann\n"

                term = s.pty(cols=90, rows=30)
                term.send("stty size\n")
                assert b"30 90" in term.read_until(b"30 90")
                term.resize(100, 33)
                term.send("stty size\n")
                assert b"33 100" in term.read_until(b"33 100")
                term.close()

                point = s.checkpoint()
                assert "bin.dat" in point["diff"]["added"]
                with tarfile.open(fileobj=io.BytesIO(s.download(point["id"]))) as tar:
                    assert "seed.txt" in tar.getnames()
                assert [c["id"] for c in s.checkpoints()] == [point["id"]]
                assert any(a["feature"] == "shell" for a in s.activities())

                state = s.suspend()
                assert state["status"] == "suspended" and state["snapshot_id"]
                with pytest.raises(Conflict):
                    s.shell.run("true")
                saved = s.state_json()
                again = client.resume(json.loads(saved))
                assert again.resumed_how == "reattached" and again.id == s.id
                assert again.shell.run("cat /workspace/seed.txt")["stdout"] == "seed"
                with pytest.raises(InvalidInput):
                    again.shell.run("")
                with pytest.raises(NotFound):
                    again.files.read("missing.txt")
            assert s.status == "ended"
            with pytest.raises(NotFound):
                client.resume({"session_id": "ses_nope"})
        with Sandlot(live_server, "sl_00000000_nope") as stranger, pytest.raises(NotAuthenticated):
            stranger.create_environment("x", ["sandlot/busybox:latest"])

    await asyncio.to_thread(scenario)


async def test_a_closed_blocking_client_refuses_calls(live_server: str, new_tenant: NewTenant) -> None:
    """A call made after another thread closed the client raises ClientClosed (a SandlotError
    adapters catch), never anyio's "portal is not running", and sends nothing."""
    key = key_of(await new_tenant())

    def scenario() -> None:
        with Sandlot(live_server, key) as client:
            name = f"cc-{secrets.token_hex(3)}"
            client.create_environment(name, ["sandlot/busybox:latest"], pool_size=0)
            closing = threading.Thread(target=client.close)
            closing.start()
            closing.join()
            with pytest.raises(ClientClosed):
                client.start_session(name)
        sessions = httpx.get(f"{live_server}/v1/sessions", headers={"Authorization": f"Bearer {key}"})
        assert sessions.raise_for_status().json() == []

    await asyncio.to_thread(scenario)


async def test_the_async_client(live_server: str, new_tenant: NewTenant) -> None:
    async with AsyncSandlot(live_server, key_of(await new_tenant())) as client:
        name = f"aio-{secrets.token_hex(3)}"
        await client.create_environment(name, ["sandlot/busybox:latest"], pool_size=0)
        async with client.session(environment=name) as s:
            assert (await s.shell.run("echo hi"))["stdout"] == "hi\n"
            proc = await s.processes.start("seq 1 3")
            chunks = [c async for c in proc.stream()]
            assert b"".join(chunks) == b"1\n2\n3\n"
            await s.files.write("a.txt", "A")
            assert await s.files.read("a.txt") == b"A"
            assert (await s.checkpoint())["diff"]["added"] == ["a.txt"]


async def test_a_full_pool_is_retried_after_retry_after(live_server: str, new_tenant: NewTenant) -> None:
    key = key_of(await new_tenant())

    def scenario() -> tuple[float, str]:
        with Sandlot(live_server, key, max_retries=6) as client:
            name = f"full-{secrets.token_hex(3)}"
            client.create_environment(name, ["sandlot/busybox:latest"], pool_size=[0, 1])
            first = client.start_session(name)
            threading.Timer(1.0, first.end).start()  # frees the only slot a second later
            started = time.monotonic()
            second = client.start_session(name)  # 503 no_capacity, retried, then served
            waited = time.monotonic() - started
            second.end()
            return waited, second.status

    waited, status = await asyncio.to_thread(scenario)
    assert waited >= 1.0 and status == "ended"


async def test_resume_after_the_server_restarted(pg_url: str, tmp_path: Path, new_tenant: NewTenant) -> None:
    key = key_of(await new_tenant())
    server = restartable_server(pg_url, tmp_path / "data")
    try:
        await asyncio.to_thread(server.start)

        def before() -> str:
            with Sandlot(server.url, key) as client:
                client.create_environment("r", ["sandlot/busybox:latest"], pool_size=0)
                s = client.start_session("r")
                s.shell.run("echo kept > f; cd /tmp")
                s.suspend()
                return s.state_json()

        saved = await asyncio.to_thread(before)
        server.stop(signal.SIGKILL)
        await asyncio.to_thread(server.start)

        def after() -> tuple[str | None, str]:
            with Sandlot(server.url, key) as client:
                s = client.resume(saved)
                out = s.shell.run("cat /workspace/f; pwd")["stdout"]
                s.end()
                return s.resumed_how, out

        how, out = await asyncio.to_thread(after)
        assert how == "reattached" and out == "kept\n/tmp\n"
    finally:
        server.stop(signal.SIGKILL)


def test_the_client_installs_alone_in_a_clean_venv(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run(["uv", "venv", "-q", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        ["uv", "pip", "install", "-q", "--python", str(python), str(ROOT / "clients/python")], check=True
    )
    probe = (
        "import importlib.util, sandlot_client; "
        "assert importlib.util.find_spec('sandlot') is None, 'server package leaked in'; "
        "print(sandlot_client.Sandlot.__name__)"
    )
    out = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "Sandlot"
