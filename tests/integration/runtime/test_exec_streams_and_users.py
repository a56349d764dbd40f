"""Commands whose stdin is a stream (a request body of any size up to the file limit), and
commands run as another user of the sandbox: every runtime takes a streamed stdin while it
reads the output; only Docker runs a command as another user, and that user keeps no
capability; the local runtime says it cannot."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxRuntime, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from sandlot.runtime.local import LocalRuntime
from tests.conftest import BUSYBOX

CHUNK = 64 * 1024


@pytest.fixture(params=["docker", "local"], scope="module")
def runtime(request: pytest.FixtureRequest) -> SandboxRuntime:
    return request.getfixturevalue(f"{request.param}_runtime")


async def _ref(runtime: SandboxRuntime) -> str:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    return await runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )


@pytest.fixture
async def ref(runtime: SandboxRuntime) -> AsyncIterator[str]:
    ref = await _ref(runtime)
    yield ref
    await runtime.remove(ref)


@pytest.fixture
async def docker_ref(docker_runtime: DockerRuntime) -> AsyncIterator[str]:
    ref = await _ref(docker_runtime)
    yield ref
    await docker_runtime.remove(ref)


def _pattern(chunks: int) -> list[bytes]:
    return [secrets.token_bytes(16) * (CHUNK // 16) for _ in range(chunks)]


async def _stream(parts: list[bytes]) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_a_streamed_stdin_comes_back_whole_while_the_output_is_read(
    runtime: SandboxRuntime, ref: str
) -> None:
    parts = _pattern(80)  # 5 MiB: far more than a pipe holds, so it must be read while sent
    res = await runtime.exec(ref, ExecRequest(["cat"], stdin=_stream(parts), output_limit=8 << 20))
    assert res.exit_code == 0 and not res.truncated
    assert res.stdout == b"".join(parts)


async def test_a_command_that_stops_reading_its_stdin_ends_the_sending(
    runtime: SandboxRuntime, ref: str
) -> None:
    parts = _pattern(400)  # 25 MiB that `head` never reads
    res = await runtime.exec(ref, ExecRequest(["head", "-c", "5"], stdin=_stream(parts), timeout=60))
    assert not res.timed_out and res.exit_code == 0
    assert res.stdout == parts[0][:5]


async def test_root_writes_where_the_sandbox_user_cannot_and_keeps_no_capability(
    docker_runtime: DockerRuntime, docker_ref: str
) -> None:
    probe = "id -u; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; touch /etc/sandlot-probe"
    own = await docker_runtime.exec(docker_ref, ExecRequest(probe))
    assert own.exit_code != 0 and b"Permission denied" in own.stderr
    assert own.stdout.startswith(b"1000\n")
    root = await docker_runtime.exec(docker_ref, ExecRequest(probe, user="root"))
    assert root.exit_code == 0, root.stderr
    assert root.stdout == b"0\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n"
    listed = await docker_runtime.exec(docker_ref, ExecRequest("ls -ln /etc/sandlot-probe"))
    assert listed.stdout.split()[2:4] == [b"0", b"0"]


async def test_a_command_of_another_user_is_killed_with_its_tree_at_its_timeout(
    docker_runtime: DockerRuntime, docker_ref: str
) -> None:
    marker = f"sleep {secrets.randbelow(9000) + 1000}"
    res = await docker_runtime.exec(
        docker_ref, ExecRequest(f"({marker} &); {marker} & sleep 100", user="root", timeout=1)
    )
    assert res.timed_out
    # killed as root (the sandbox user cannot signal root's processes); SIGKILL is
    # asynchronous, so a moment may pass before they are gone from the listing
    for _ in range(50):
        left = await docker_runtime.exec(docker_ref, ExecRequest(["ps", "-o", "args"]))
        if marker.encode() not in left.stdout:
            break
    assert marker.encode() not in left.stdout


async def test_an_unknown_user_is_the_commands_failure_not_the_sandboxs(
    docker_runtime: DockerRuntime, docker_ref: str
) -> None:
    res = await docker_runtime.exec(docker_ref, ExecRequest(["whoami"], user="nonexistent"))
    assert res.exit_code == 126 and b"nonexistent" in res.stdout + res.stderr
    assert (await docker_runtime.exec(docker_ref, ExecRequest(["true"]))).exit_code == 0


async def test_the_local_runtime_refuses_another_user(local_runtime: LocalRuntime) -> None:
    assert not local_runtime.other_users
    ref = await _ref(local_runtime)
    try:
        with pytest.raises(InvalidInput, match="Docker runtime"):
            await local_runtime.exec(ref, ExecRequest(["id"], user="root"))
    finally:
        await local_runtime.remove(ref)


async def test_a_user_name_is_checked_before_anything_runs(docker_runtime: DockerRuntime) -> None:
    for bad in ("root;id", "0:0", "r\x00", "-u", "x" * 33, "$(id)"):
        with pytest.raises(InvalidInput):
            ExecRequest(["id"], user=bad).validate()
