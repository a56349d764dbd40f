"""A newcomer's first steps, verbatim: a fresh clone, the README's start command with the
default (relative) data directory, and every block of the README's API tour, once with no
Docker engine reachable (the local runtime under bubblewrap) and once with Docker."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import INSTANCE
from tests.integration.servers import Server, logs

REPO = Path(__file__).resolve().parents[2]
START = "./scripts/start.sh"


def tour_script(readme: str) -> str:
    """Every ```bash block of the README's API tour section, in order."""
    section = readme.split("\n## API tour\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```bash\n(.*?)```", section, flags=re.S))


def test_the_readme_names_its_start_command_and_the_tour_has_blocks() -> None:
    readme = (REPO / "README.md").read_text()
    assert f"```bash\n{START}\n```" in readme
    assert tour_script(readme).count("api ") > 20


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    target = tmp_path / "sandlot"
    subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True, timeout=120)
    return target


def _newcomer_env() -> dict[str, str]:
    """This process's environment without what the test run itself set (a newcomer's shell
    has no SANDLOT_* settings and no active virtual environment)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("SANDLOT_") and k != "VIRTUAL_ENV"}


@pytest.fixture(params=["no-docker", "docker"])
def started(request: pytest.FixtureRequest, clone: Path, tmp_path: Path) -> Iterator[tuple[Path, str, str]]:
    """The README's start command in the clone; yields (clone, base URL, what it printed)."""
    settings = {"SANDLOT_INSTANCE": f"{INSTANCE}-tour-{request.param}"}
    if request.param == "no-docker":
        settings["DOCKER_HOST"] = f"unix://{tmp_path}/no-docker-here.sock"
    log = tmp_path / "start.log"
    server = Server(
        settings,
        log,
        environ=_newcomer_env(),
        command=[START],
        cwd=clone,
        new_session=True,  # the script's children (uv, sandlot, its workers) go with it
        ready=logs("Sandlot listening on"),
        timeout=300,
    )
    with server:
        assert httpx.get(f"{server.url}/healthz", timeout=5).json()["status"] == "ok"
        yield clone, server.url, log.read_text()


def test_a_fresh_clone_serves_and_the_tour_runs_verbatim(started: tuple[Path, str, str]) -> None:
    clone, url, printed = started
    assert "Operator key (shown once, keep it): sl_" in printed
    assert ".sandlot" in os.listdir(clone)  # the default, relative data dir
    ready = httpx.get(f"{url}/readyz", timeout=5).json()
    runtime = ready["runtime"]
    env = _newcomer_env() | {"SANDLOT": url}
    if runtime == "local":
        env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", tour_script((clone / "README.md").read_text())],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    said = result.stdout + result.stderr
    assert result.returncode == 0, said
    for expected in (
        '"stdout":"hi\\n"',  # exec
        "the file came back identical",  # file round trip
        '"stdout":"/tmp\\n1\\n"',  # the shell kept cwd and exports
        '"value":"42"',  # python
        '"status":"exited"',  # a background process
        "line 3",  # and its output
        "the terminal answered 42",  # a PTY
        '"added":["a.txt"]',  # a checkpoint
        '"status":"suspended"',  # suspend
        '"how":"reattached"',  # resume
        '"stdout":"/tmp\\nhi"',  # shell state and files after resuming
        '"stdout":"2 /workspace/data.csv\\n"',  # an asset
    ):
        assert expected in said, f"{expected!r} missing from:\n{said}"
