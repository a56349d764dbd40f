"""The inspect_ai sandbox environment (``sandlot_client.inspect_ai``) against a live server on
real Docker: inspect's own conformance suite (``inspect_ai.util._sandbox.self_check``, every
check, pulled in below) on one Sandlot session, then a whole ``inspect eval`` of a task whose
``sandbox=("sandlot", "sandlot.yaml")``, found through inspect's entry point.

The service allows root and the check's own user (``exec_users_allowed``), and so does the
environment. The sandbox keeps no capability, so Debian's ``adduser`` cannot give a new home to
its user (it needs CAP_CHOWN) nor write ``/etc/gshadow`` back with its ``shadow`` group: before
the checks, root makes the home the check's user will get and gives the shadow files to root's
own group (what an image built for user management would ship; nothing is given capabilities).
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import SandboxEnvironment, SandboxEnvironmentSpec, sandbox
from inspect_ai.util._sandbox.self_check import *  # noqa: F403  (inspect's checks, as pytest tests)

from sandlot.services.accounts import AccountService
from sandlot_client import Sandlot
from sandlot_client.inspect_ai import SandlotSandboxConfig, SandlotSandboxEnvironment
from tests.conftest import INSTANCE
from tests.integration.servers import Server

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(300)]

IMAGE = "sandlot/python:3"
CHECK_USER = "inspect-ai-test-exec-as-user"  # the user test_exec_as_user makes
PREPARE = f"chgrp root /etc/shadow /etc/gshadow && mkdir -p /home/{CHECK_USER}"


@pytest.fixture(scope="module")
def inspect_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("inspect")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": INSTANCE,
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",
        "SANDLOT_EXEC_USERS_ALLOWED": json.dumps(["root", CHECK_USER]),
    }
    with Server(settings, data_dir / "server.log") as server:
        yield server.url


@pytest.fixture(scope="module")
async def inspect_key(accounts: AccountService) -> str:
    tenant = await accounts.create_tenant(f"inspect-{secrets.token_hex(4)}")
    return (await accounts.create_key(tenant.id)).plaintext


@pytest.fixture(scope="module")
def config(inspect_server: str, inspect_key: str) -> SandlotSandboxConfig:
    return SandlotSandboxConfig(
        url=inspect_server,
        api_key=inspect_key,
        environment=f"inspect-{secrets.token_hex(3)}",
        image=IMAGE,
        create_environment={"pool_size": [1, 2], "exec_users": ["root", CHECK_USER]},
    )


@pytest.fixture(scope="module")
async def shared_sandbox(config: SandlotSandboxConfig) -> AsyncIterator[SandboxEnvironment]:
    """One Sandlot session for every check, through inspect's own lifecycle."""
    await SandlotSandboxEnvironment.task_init("self-check", config)
    envs = await SandlotSandboxEnvironment.sample_init("self-check", config, {})
    env = envs["default"]
    prepared = await env.exec(["sh", "-c", PREPARE], user="root")
    assert prepared.success, prepared.stderr
    yield env
    await SandlotSandboxEnvironment.sample_cleanup("self-check", config, envs, False)
    await SandlotSandboxEnvironment.task_cleanup("self-check", config, True)


@pytest.fixture
def sandbox_env(shared_sandbox: SandboxEnvironment) -> SandboxEnvironment:
    """What inspect's checks take (function-scoped, over the module's one session)."""
    return shared_sandbox


async def test_the_self_check_is_all_here() -> None:
    from inspect_ai.util._sandbox import self_check

    assert len(self_check.__all__) == 44
    assert all(name in globals() for name in self_check.__all__)


def test_a_configuration_may_be_a_dict_and_never_carries_the_key() -> None:
    spec = SandboxEnvironmentSpec("sandlot", {"url": "http://x", "environment": "e", "api_key": "sl_secret"})
    assert isinstance(spec.config, SandlotSandboxConfig) and spec.config.environment == "e"
    assert "sl_secret" not in spec.model_dump_json() and "sl_secret" not in repr(spec)


async def test_a_timeout_leaves_no_process_behind(sandbox_env: SandboxEnvironment) -> None:
    """inspect's own two checks look with ``ps``, which this image lacks; /proc tells."""
    marker = f"sleep {secrets.randbelow(9000) + 1000}"
    with pytest.raises(TimeoutError):
        await sandbox_env.exec(["sh", "-c", f"({marker} &); {marker}; :"], timeout=1)
    # "[s]leep N" matches the sleeps, never the pipeline's own command line
    look = ["sh", "-c", f"cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' ' | grep -c '[s]{marker[1:]}'"]
    for _ in range(50):
        left = await sandbox_env.exec(look)
        if left.stdout.strip() == "0":
            break
    assert left.stdout.strip() == "0"


async def test_files_outside_the_workspace_move_whole_in_pieces(sandbox_env: SandboxEnvironment) -> None:
    data = secrets.token_bytes(9 << 20)  # three pieces out, one streamed command in
    await sandbox_env.write_file("/tmp/deep/er/big.bin", data)
    assert await sandbox_env.read_file("/tmp/deep/er/big.bin", text=False) == data
    with pytest.raises(PermissionError):
        await sandbox_env.write_file("/etc/passwd", "no")
    with pytest.raises(FileNotFoundError):
        await sandbox_env.read_file("/tmp/deep/nothing")
    await sandbox_env.exec(["rm", "-rf", "/tmp/deep"])


@solver
def _probe() -> object:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        box = sandbox()
        await box.write_file("answer.txt", "forty-two\n")
        ran = await box.exec(["sh", "-c", "cat answer.txt; id -u"])
        state.output.completion = ran.stdout
        return state

    return solve


async def test_an_eval_of_a_task_with_sandbox_sandlot(
    config: SandlotSandboxConfig, inspect_key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider is found by name (inspect's entry point), its configuration read from a
    file beside the task, each sample gets its own session, and every session ends."""
    settings = {
        "url": config.url,
        "environment": config.environment,
        "image": IMAGE,
        "create_environment": {"pool_size": [0, 2]},  # when the checks above have not made it
    }
    (tmp_path / "sandlot.yaml").write_text(json.dumps(settings))  # JSON is YAML too
    monkeypatch.setenv("SANDLOT_API_KEY", inspect_key)
    monkeypatch.chdir(tmp_path)
    task = Task(
        dataset=[Sample(input="a", target="forty-two"), Sample(input="b", target="forty-two")],
        solver=_probe(),
        scorer=includes(),
        sandbox=("sandlot", "sandlot.yaml"),
    )

    def sessions() -> dict[str, str]:
        with Sandlot(str(config.url), inspect_key) as client:
            found = client._run(client.aio.call("GET", "/v1/sessions?limit=1000"))
            return {s["id"]: s["status"] for s in found}

    before = await asyncio.to_thread(sessions)
    logs = await asyncio.to_thread(
        eval, task, model="mockllm/model", log_dir=str(tmp_path / "logs"), display="none"
    )
    log = logs[0]
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 2
    for sample in log.samples:
        assert sample.output.completion == "forty-two\n1000\n"
        assert sample.scores is not None and sample.scores["includes"].value == "C"
    assert inspect_key not in (tmp_path / "logs").joinpath(log.location).read_text(errors="replace")
    made = {i: status for i, status in (await asyncio.to_thread(sessions)).items() if i not in before}
    assert list(made.values()) == ["ended", "ended"]  # one per sample, each ended by its cleanup
