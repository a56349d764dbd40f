"""The persistent shell on every runtime (Docker and local)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest

from sandlot.domain.errors import Conflict
from sandlot.runtime.base import SandboxRuntime, SandboxSpec
from sandlot.runtime.shell import PersistentShell
from sandlot.runtime.shells import ShellManager
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


async def test_a_check_in_a_waiting_shell_keeps_no_state_and_a_command_waits_for_it(
    runtime: SandboxRuntime, shell: PersistentShell
) -> None:
    """The keepalive of a pool sandbox runs in the shell opened while it waits: it reports the
    exit code, writes no session state, and the adopting session's first command sent while it
    runs waits for it (no Conflict) and then binds its own state."""
    waiting = ShellManager(runtime)
    await waiting.warm("sbx_w", shell.ref)
    assert not waiting.in_session(shell.ref)
    assert await waiting.check_warm("sbx_other", shell.ref, "true", 5) is None
    failed = await waiting.check_warm("sbx_w", shell.ref, "export X=1; exit 3", 5)
    assert failed is not None and failed.exit_code == 3
    slow = asyncio.ensure_future(waiting.check_warm("sbx_w", shell.ref, "sleep 0.3; echo checked", 5))
    await asyncio.sleep(0.1)
    adopted = waiting.get("ses_w", shell.ref, "sbx_w")
    res = await run(adopted, "echo X=$X; pwd")
    ok = await slow
    assert ok is not None and (ok.exit_code, ok.stdout) == (0, b"checked\n")
    assert res.exit_code == 0 and res.stdout.startswith(b"X=\n")
    assert (await run(adopted, "export Y=2; cd /tmp")).exit_code == 0
    assert (await run(adopted, "echo $Y; pwd")).stdout == b"2\n/tmp\n"
    assert await waiting.check_warm("sbx_w", shell.ref, "true", 5) is None  # a session's now
    assert waiting.in_session(shell.ref)
    await waiting.close_all()
