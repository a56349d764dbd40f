"""The langfun adapter (sandlot_client.langfun_env) against a live server on real Docker:
``lf.env.Environment`` code runs unchanged on Sandlot sessions; a container killed underneath
a sandbox surfaces as ``lf.env.SandboxStateError`` and the next sandbox is healthy."""

from __future__ import annotations

import asyncio
import secrets
from concurrent.futures import ThreadPoolExecutor

import langfun as lf
import pytest

from sandlot_client import Sandlot
from sandlot_client.langfun_env import SandlotSandbox, SandlotSandboxService
from tests.integration.conftest import NewTenant, key_of
from tests.support.docker import kill_container

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(180)]

IMAGE = "sandlot/busybox:latest"


def kill_underneath(sandbox_id: str) -> None:
    asyncio.run(kill_container(sandbox_id))


def run_scenario(live_server: str, key: str, langfun_pool: int) -> None:
    with Sandlot(live_server, key) as admin:
        env_name = f"lf-{secrets.token_hex(3)}"
        admin.create_environment(env_name, [IMAGE], pool_size=[1, 1])  # a pool of one sandbox
    service = SandlotSandboxService(
        base_url=live_server,
        api_key=key,
        sandlot_environment=env_name,
        image_ids=[IMAGE],
        pool_size=langfun_pool,
        outage_grace_period=30,
        outage_retry_interval=1,
        housekeep_interval=1,
    )
    env = lf.env.Environment(sandboxes={"sandlot": service})
    with env:
        seen: list[str] = []
        for i in range(2):  # twice on the pool of one: the same sandbox, reset in between
            with env.sandbox() as sb:
                assert isinstance(sb, SandlotSandbox)
                out = sb.shell(f"echo run-{i} > f && cat f && cat /workspace/g 2>/dev/null; echo g > g")
                assert out["exit_code"] == 0
                # nothing of the previous session is left over, unless langfun pooled the sandbox
                assert out["stdout"] == (f"run-{i}\ng\n" if i and langfun_pool else f"run-{i}\n")
                assert sb.exec(["cat", "f"])["stdout"] == f"run-{i}\n"
                sb.write_file("data.bin", b"\x00\x01")
                assert sb.read_file("data.bin") == b"\x00\x01"
                with pytest.raises(FileNotFoundError):
                    sb.read_file("missing.txt")
                seen.append(str(sb.session.sandbox_id))
        assert seen[0] == seen[1]

        # the container is killed underneath: a SandboxStateError, and the sandbox is dropped
        with pytest.raises(lf.env.SandboxStateError), env.sandbox() as sb:
            sandbox_id = str(sb.session.sandbox_id)
            kill_underneath(sandbox_id)
            sb.shell("echo still there?")
        assert sb.status == lf.env.Sandbox.Status.OFFLINE
        assert sb.state_errors

        # the service replaces it: the next sandbox works (on a new container)
        with env.sandbox() as sb:
            assert sb.shell("echo back")["stdout"] == "back\n"
            assert str(sb.session.sandbox_id) != sandbox_id


@pytest.mark.parametrize("langfun_pool", [0, 1], ids=["sandlot-pooled", "langfun-pooled"])
async def test_env_sandbox_twice_on_a_pool_of_one_then_a_killed_container(
    live_server: str, new_tenant: NewTenant, langfun_pool: int
) -> None:
    key = key_of(await new_tenant())
    await asyncio.to_thread(run_scenario, live_server, key, langfun_pool)


async def test_an_unreachable_service_is_an_outage(new_tenant: NewTenant) -> None:
    def scenario() -> None:
        service = SandlotSandboxService(
            base_url="http://127.0.0.1:9", api_key="sl_nothing", sandlot_environment="x", image_ids=[IMAGE]
        )
        env = lf.env.Environment(sandboxes={"sandlot": service})
        with pytest.raises(lf.env.SandboxServiceOutageError), env:
            pass

    await asyncio.to_thread(scenario)


def two_threads_on_one_sandbox(live_server: str, key: str) -> list[dict]:
    with Sandlot(live_server, key) as admin:
        env_name = f"lf-{secrets.token_hex(3)}"
        admin.create_environment(env_name, [IMAGE], pool_size=[1, 1])
    service = SandlotSandboxService(
        base_url=live_server, api_key=key, sandlot_environment=env_name, image_ids=[IMAGE]
    )
    env = lf.env.Environment(sandboxes={"sandlot": service})
    with env, env.sandbox() as sb, ThreadPoolExecutor(2) as threads:
        # both in the session's shell at once: the second waits its turn, never a 409
        runs = [threads.submit(sb.shell, f"sleep 1; echo done-{i}") for i in range(2)]
        return [run.result() for run in runs]


async def test_two_threads_on_one_sandbox_both_get_their_output(
    live_server: str, new_tenant: NewTenant
) -> None:
    """langfun calls one sandbox from several threads (a proactive session setup beside the
    last session's teardown): each call gets its own output."""
    results = await asyncio.to_thread(two_threads_on_one_sandbox, live_server, key_of(await new_tenant()))
    assert [(r["exit_code"], r["stdout"]) for r in results] == [(0, "done-0\n"), (0, "done-1\n")]


def rebind_then_shut_down(live_server: str, key: str) -> None:
    with Sandlot(live_server, key) as admin:
        env_name = f"lf-{secrets.token_hex(3)}"
        admin.create_environment(env_name, [IMAGE], pool_size=[1, 1])
    service = SandlotSandboxService(
        base_url=live_server,
        api_key=key,
        sandlot_environment=env_name,
        image_ids=[IMAGE],
        sandbox_keepalive_interval=5,
    )
    with lf.env.Environment(sandboxes={"sandlot": service}):
        with lf.env.Environment.current().sandbox() as sb:
            housekeeping = sb._housekeep_thread
            assert housekeeping is not None and housekeeping.is_alive()
            sb.rebind(keepalive_interval=4)  # a field changed: langfun binds the sandbox again
            assert sb._housekeep_thread is housekeeping
        # the session's end shut the sandbox down (no langfun pool): its housekeeping with it
        assert not housekeeping.is_alive()


async def test_a_rebound_sandbox_keeps_its_housekeeping_and_its_shutdown_stops_it(
    live_server: str, new_tenant: NewTenant
) -> None:
    """langfun forgets a sandbox's housekeeping thread when the sandbox is bound again; its
    pings then ran on through the shutdown and one cut short by the session's end was reported
    as a broken sandbox (a FLAKY of langfun's own suite on Sandlot)."""
    await asyncio.to_thread(rebind_then_shut_down, live_server, key_of(await new_tenant()))
