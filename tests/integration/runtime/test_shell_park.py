"""A suspend parks the session's shells: a command that was already waiting for the session's
shell when it was parked is refused (the sandbox is about to be frozen: opening the shell
again there would start a process the freeze misses), and the park holds until it is lifted
on purpose, whatever error that refused command then meets."""

from __future__ import annotations

import secrets

import pytest

from sandlot.domain.errors import Conflict, SandboxStateError
from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from sandlot.runtime.shells import ShellManager
from tests.conftest import BUSYBOX

pytestmark = pytest.mark.docker


async def test_a_command_waiting_for_a_parked_shell_is_refused_and_the_park_holds(
    docker_runtime: DockerRuntime,
) -> None:
    rt = docker_runtime
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await rt.create(SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id}))
    shells = ShellManager(rt)
    try:
        shell = shells.get("s1", ref)
        await shell.run("echo up", timeout=10, silence_timeout=None, output_limit=1 << 16)
        # a call got the shell before the park and sends its command after it
        await shells.park("s1")
        with pytest.raises(SandboxStateError):
            await shell.run("touch /tmp/ran", timeout=10, silence_timeout=None, output_limit=1 << 16)
        await shells.close("s1", unpark=False)  # what the refused call's error handling does
        with pytest.raises(Conflict):
            shells.get("s1", ref)  # still parked
        res = await rt.exec(ref, ExecRequest("ls /tmp/ran 2>/dev/null || echo none"))
        assert res.stdout == b"none\n"
    finally:
        await shells.close_all()
        await rt.remove(ref)
