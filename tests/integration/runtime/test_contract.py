"""One suite, every runtime: Docker (real engine) and local (real processes here)."""

from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import AsyncIterator

import pytest

from sandlot.domain.errors import ImageNotFound, NotFound, PathOutsideWorkspace, PayloadTooLarge
from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxRuntime, SandboxSpec
from tests.conftest import BUSYBOX, INSTANCE

WS = "/workspace"


@pytest.fixture(params=["docker", "local"], scope="module")
def runtime(request: pytest.FixtureRequest) -> SandboxRuntime:
    return request.getfixturevalue(f"{request.param}_runtime")


@pytest.fixture
async def ref(runtime: SandboxRuntime) -> AsyncIterator[str]:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )
    yield ref
    await runtime.remove(ref)


async def test_exec_returns_exit_code_and_both_streams(runtime: SandboxRuntime, ref: str) -> None:
    res = await runtime.exec(ref, ExecRequest("echo out; echo err >&2; exit 3"))
    assert (res.exit_code, res.stdout, res.stderr) == (3, b"out\n", b"err\n")
    assert not res.timed_out and not res.truncated


async def test_exec_takes_argv_stdin_env_and_cwd(runtime: SandboxRuntime, ref: str) -> None:
    res = await runtime.exec(ref, ExecRequest(["cat"], stdin=b"\x00binary\xff"))
    assert res.stdout == b"\x00binary\xff"
    await runtime.exec(ref, ExecRequest("mkdir -p sub"))
    res = await runtime.exec(
        ref, ExecRequest('echo "$GREETING"; pwd', env={"GREETING": "hey"}, cwd=f"{WS}/sub")
    )
    assert res.stdout == f"hey\n{WS}/sub\n".encode()


async def test_timeout_kills_the_whole_tree_and_keeps_partial_output(
    runtime: SandboxRuntime, ref: str
) -> None:
    # durations no other test uses: the local runtime's ps lists the whole host, Docker's
    # containers included
    far, near = (f"sleep {secrets.randbelow(9000) + 1000}" for _ in range(2))
    started = time.monotonic()
    res = await runtime.exec(ref, ExecRequest(f"echo begun; ({far} &); {near} & sleep 100", timeout=1))
    assert time.monotonic() - started < 5
    assert res.timed_out and res.exit_code is None
    assert res.stdout == b"begun\n"
    # SIGKILL is asynchronous: on a loaded machine a killed process may still be listed for a
    # moment, so allow it a few seconds to be gone
    deadline = time.monotonic() + 5
    while True:
        left = await runtime.exec(ref, ExecRequest("ps -o args 2>/dev/null || ps"))
        if far.encode() not in left.stdout and near.encode() not in left.stdout:
            break
        assert time.monotonic() < deadline, left.stdout
        await asyncio.sleep(0.2)


async def test_output_past_the_limit_is_truncated(runtime: SandboxRuntime, ref: str) -> None:
    res = await runtime.exec(ref, ExecRequest("head -c 3000000 /dev/zero", output_limit=4096))
    assert res.exit_code == 0
    assert res.stdout == b"\x00" * 4096 and res.truncated


async def test_file_round_trip_is_byte_identical(runtime: SandboxRuntime, ref: str) -> None:
    data = os.urandom(10 * 1024 * 1024)
    await runtime.write_file(ref, f"{WS}/deep/er/blob.bin", data, WS)
    assert await runtime.read_file(ref, f"{WS}/deep/er/blob.bin", WS, 1 << 30) == data
    res = await runtime.exec(ref, ExecRequest("wc -c < deep/er/blob.bin"))
    assert res.stdout.strip() == b"10485760"


async def test_symlinks_pointing_out_are_refused_both_ways(runtime: SandboxRuntime, ref: str) -> None:
    await runtime.exec(ref, ExecRequest("ln -s /etc out; ln -s /etc/passwd pw; ln -s /nope/x dangling"))
    for path in ("pw", "out/passwd", "dangling"):
        with pytest.raises(PathOutsideWorkspace):
            await runtime.read_file(ref, f"{WS}/{path}", WS, 1 << 20)
        with pytest.raises(PathOutsideWorkspace):
            await runtime.write_file(ref, f"{WS}/{path}", b"x", WS)


async def test_reading_a_missing_or_too_large_file_fails_clearly(runtime: SandboxRuntime, ref: str) -> None:
    with pytest.raises(NotFound):
        await runtime.read_file(ref, f"{WS}/missing", WS, 100)
    await runtime.write_file(ref, f"{WS}/big", b"x" * 1000, WS)
    with pytest.raises(PayloadTooLarge):
        await runtime.read_file(ref, f"{WS}/big", WS, 100)


async def test_unknown_image_is_refused(runtime: SandboxRuntime) -> None:
    assert not await runtime.image_exists("sandlot/does-not-exist:1")
    with pytest.raises(ImageNotFound):
        await runtime.create(SandboxSpec("sbx_nope", "ten_test", "sandlot/does-not-exist:1"))


async def test_sandboxes_are_listed_by_label_and_gone_after_remove(runtime: SandboxRuntime) -> None:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )
    owned = {o.ref: o for o in await runtime.list_owned(INSTANCE)}
    assert owned[ref].labels[LABEL_SANDBOX] == sandbox_id and owned[ref].running
    await runtime.remove(ref)
    assert ref not in {o.ref for o in await runtime.list_owned(INSTANCE)}
    assert not await runtime.is_running(ref)
    await runtime.remove(ref)  # removing twice is fine
