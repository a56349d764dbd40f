"""The server as a container image: built offline (scripts/build-image.sh, on the Debian image
the project makes), run as an unprivileged user, it serves /healthz and runs a sandbox
through the host's engine."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import BUSYBOX, INSTANCE

REPO = Path(__file__).resolve().parents[2]
TAG = f"sandlot-test/server:{INSTANCE}"


@pytest.fixture(scope="module")
def image() -> Iterator[str]:
    subprocess.run(["./scripts/build-image.sh", TAG], cwd=REPO, check=True, timeout=1800)
    yield TAG
    subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True, check=False, timeout=300)


@pytest.fixture
def server(image: str) -> Iterator[tuple[str, str]]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    name = f"sandlot-server-{INSTANCE}"
    subprocess.run(
        [
            "docker", "run", "-d", "--name", name, "--network", "host",
            "-e", f"SANDLOT_PORT={port}", "-e", "SANDLOT_HOST=127.0.0.1", "-e", "SANDLOT_RUNTIME=docker",
            "-e", f"SANDLOT_INSTANCE={INSTANCE}-img",
            "-v", "/var/run/docker.sock:/var/run/docker.sock",
            "--group-add", str(os.stat("/var/run/docker.sock").st_gid),
            image,
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        logs = ""
        while "Operator key" not in logs:
            logs = subprocess.run(["docker", "logs", name], capture_output=True, text=True, check=False)
            logs = logs.stdout + logs.stderr
            assert time.monotonic() < deadline, logs
            time.sleep(0.5)
        found = re.search(r"Operator key \(shown once, keep it\): (sl_\S+)", logs)
        assert found, logs
        yield f"http://127.0.0.1:{port}", found.group(1)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


@pytest.mark.timeout(1800)  # the first build collects every wheel
def test_the_image_serves_and_runs_a_sandbox_on_the_hosts_engine(server: tuple[str, str]) -> None:

    url, key = server
    user = subprocess.run(
        ["docker", "exec", f"sandlot-server-{INSTANCE}", "id", "-un"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert user.stdout.strip() == "sandlot"  # not root
    assert httpx.get(f"{url}/healthz", timeout=5).json()["status"] == "ok"
    h = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=url, headers=h, timeout=120) as http:
        box = http.post("/v1/sandboxes", json={"image": BUSYBOX})
        assert box.status_code == 201, box.text
        ran = http.post(f"/v1/sandboxes/{box.json()['id']}/exec", json={"command": "echo from the image"})
        assert ran.json()["stdout"] == "from the image\n", ran.text
        assert http.delete(f"/v1/sandboxes/{box.json()['id']}").status_code == 204
