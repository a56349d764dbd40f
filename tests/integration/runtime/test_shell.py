"""The persistent shell on every runtime (Docker and local)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest

from sandlot.domain.errors import Conflict
from sandlot.runtime.base import SandboxRuntime, SandboxSpec
from sandlot.runtime.shell import PersistentShell
from tests.conftest import BUSYBOX


@pytest.fixture(params=["docker", "local"], scope="module")
def runtime(request: pytest.FixtureRequest) -> SandboxRuntime:
    return request.getfixturevalue(f"{request.param}_runtime")


@pytest.fixture
async def shell(runtime: SandboxRuntime) -> AsyncIterator[PersistentShell]:
    ref = await runtime.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX))
    sh = PersistentShell(runtime, ref, "s1")
    yield sh
    await sh.close()
    await runtime.remove(ref)


def run(shell: PersistentShell, command: str, timeout: float = 10.0):  # type: ignore[no-untyped-def]
    return shell.run(command, timeout=timeout, silence_timeout=None, output_limit=8 << 20)


async def test_state_persists_and_exit_does_not_kill_the_shell(shell: PersistentShell) -> None:
    await run(shell, "mkdir -p /workspace/sub && cd /workspace/sub; export GREETING='a b'")
    res = await run(shell, 'pwd; echo "$GREETING"; exit 7')
    assert (res.exit_code, res.stdout) == (7, b"/workspace/sub\na b\n")
    assert (await run(shell, "echo ok")).stdout == b"ok\n"


async def test_a_second_command_while_one_runs_is_refused(shell: PersistentShell) -> None:
    await run(shell, "true")
    first = asyncio.ensure_future(run(shell, "sleep 0.5; echo done"))
    await asyncio.sleep(0.1)
    with pytest.raises(Conflict):
        await run(shell, "echo intruder")
    assert (await first).stdout == b"done\n"


async def test_output_framing_survives_tricky_output(shell: PersistentShell) -> None:
    tricky = "printf '__SL_fake 0\\n'; printf 'x\\n\\n\\n'; printf 'err' >&2"
    res = await run(shell, tricky)
    assert res.stdout == b"__SL_fake 0\nx\n\n\n" and res.stderr == b"err"


async def test_timeout_kills_children_and_keeps_the_shell(shell: PersistentShell) -> None:
    res = await run(shell, "sleep 300 & sleep 301", timeout=1)
    assert res.timed_out
    left = await run(shell, "ps -o args 2>/dev/null || ps")
    assert b"sleep 30" not in left.stdout
