"""Suspending a Docker sandbox stops its processes without the engine's cgroup freezer: a
``docker exec`` that starts at the very moment of the freeze (a snapshot of a second API
process, a one-shot of an agent) once wedged the container for good (its unpause and its
removal hung until a host's root killed the exec). Now a freeze racing execs never wedges
anything, the sandbox's processes stand still while it is frozen and go on after the thaw, and
a process stopped before the freeze stays stopped. An exec's own start caught by the freeze
(runc's init, already the sandbox user's, not yet the command) is continued at once: stopped,
it held the engine's start of the exec and every exit and start of the container after it."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator

import pytest

from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from tests.conftest import BUSYBOX

pytestmark = pytest.mark.docker


@pytest.fixture
async def ref(docker_runtime: DockerRuntime) -> AsyncIterator[str]:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await docker_runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )
    yield ref
    await asyncio.wait_for(docker_runtime.remove(ref), 60)


async def sh(rt: DockerRuntime, ref: str, command: str) -> str:
    res = await rt.exec(ref, ExecRequest(["/bin/sh", "-c", command], timeout=30))
    assert res.exit_code == 0, res
    return res.stdout.decode()


async def test_execs_racing_freezes_never_wedge_the_sandbox(docker_runtime: DockerRuntime, ref: str) -> None:
    rt = docker_runtime
    for i in range(12):
        racing = [asyncio.create_task(sh(rt, ref, "echo hi")) for _ in range(3)]
        await asyncio.sleep(0.01 * (i % 4))
        await asyncio.wait_for(rt.pause(ref), 30)
        await asyncio.wait_for(rt.unpause(ref), 30)  # the engine's pause hung here at once
        for out in await asyncio.wait_for(asyncio.gather(*racing), 60):
            assert out == "hi\n"
    assert await sh(rt, ref, "echo alive") == "alive\n"


async def test_a_frozen_sandbox_stands_still_and_goes_on_after_the_thaw(
    docker_runtime: DockerRuntime, ref: str
) -> None:
    rt = docker_runtime
    await sh(rt, ref, "(while :; do echo x >> /tmp/ticks; sleep 0.05; done) >/dev/null 2>&1 &")
    await sh(rt, ref, "sleep 600 >/dev/null 2>&1 & echo $! > /tmp/held; kill -STOP $!")
    await asyncio.sleep(0.3)
    stopped = await rt.pause(ref)
    held = int((await sh(rt, ref, "cat /tmp/held")).strip())
    assert held in stopped  # the service keeps them: nothing in the sandbox says what to leave
    before = await sh(rt, ref, "wc -c < /tmp/ticks")  # a process of ours still starts
    await asyncio.sleep(0.5)
    assert await sh(rt, ref, "wc -c < /tmp/ticks") == before
    await rt.unpause(ref, stopped)
    await asyncio.sleep(0.5)
    assert int(await sh(rt, ref, "wc -c < /tmp/ticks")) > int(before)
    # stopped by its own session before the freeze: the thaw leaves it so
    state = await sh(rt, ref, 'set -- $(cat /proc/$(cat /tmp/held)/stat); echo "$3"')
    assert state.strip() == "T"


async def _state(rt: DockerRuntime, ref: str, pid: int) -> str:
    return (await sh(rt, ref, f'set -- $(cat /proc/{pid}/stat); echo "$3"')).strip()


async def test_an_execs_start_caught_by_the_freeze_is_continued_and_a_lookalike_is_not(
    docker_runtime: DockerRuntime, ref: str
) -> None:
    """Deterministic: runc's init in its last stage is a process whose parent is outside the
    sandbox (the engine's runc) named ``runc:[2:INIT]``. One is made so (a docker exec's own
    process that renames itself): the freeze must leave it running. A process of the sandbox
    user's own renamed alike (its parent is in the sandbox) is stopped like any other. On the
    old freeze both stood stopped, and a real one wedged the container."""
    rt = docker_runtime
    rename = 'printf "runc:[2:INIT]" > /proc/$$/comm'
    _exe, stream = await rt.attach(ref, ["/bin/sh", "-c", f"{rename}; echo $$; while :; do sleep 1; done"])
    starting = lookalike = 0
    try:
        first = await asyncio.wait_for(stream.read_out(), 10)
        assert first is not None
        starting = int(first.data.split()[0])
        own = f"{rename}; echo $$ > /tmp/lookalike; while :; do sleep 1; done"
        await sh(rt, ref, f"(sh -c '{own}' &) >/dev/null 2>&1")
        wait = "while ! [ -s /tmp/lookalike ]; do sleep 0.01; done; cat /tmp/lookalike"
        lookalike = int((await sh(rt, ref, wait)).strip())
        names = await sh(rt, ref, f"cat /proc/{starting}/comm /proc/{lookalike}/comm")
        assert names == "runc:[2:INIT]\nrunc:[2:INIT]\n"
        assert (await sh(rt, ref, f"set -- $(cat /proc/{starting}/stat); echo $4")).strip() == "0"
        stopped = await asyncio.wait_for(rt.pause(ref), 30)
        assert await _state(rt, ref, starting) in {"R", "S"}
        assert await _state(rt, ref, lookalike) == "T"
        await asyncio.wait_for(rt.unpause(ref, stopped), 30)
        assert await _state(rt, ref, lookalike) in {"R", "S"}
    finally:
        left = " ".join(str(pid) for pid in (starting, lookalike) if pid)
        if left:
            await sh(rt, ref, f"kill -9 {left} 2>/dev/null; true")
        await stream.close()
