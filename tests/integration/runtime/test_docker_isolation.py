"""What a sandbox process can and cannot do, checked from inside a real container."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest

from sandlot.runtime.base import ExecRequest, Limits, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from tests.conftest import BUSYBOX, PYTHON


@pytest.fixture
async def small(docker_runtime: DockerRuntime) -> AsyncIterator[str]:
    ref = await docker_runtime.create(
        SandboxSpec(
            f"sbx_{secrets.token_hex(8)}",
            "ten_test",
            PYTHON,
            limits=Limits(memory_mb=64, cpus=0.5, pids=64),
        )
    )
    yield ref
    await docker_runtime.remove(ref)


async def test_memory_limit_kills_a_process_and_reports_it(docker_runtime: DockerRuntime, small: str) -> None:
    res = await docker_runtime.exec(
        small, ExecRequest(["python3", "-c", "b = bytearray(300 * 1024 * 1024); print('survived')"])
    )
    assert res.exit_code == 137
    assert res.oom_killed
    assert b"survived" not in res.stdout
    after = await docker_runtime.exec(small, ExecRequest("echo still-here"))
    assert after.stdout == b"still-here\n"


async def test_fork_bomb_is_stopped_by_the_pids_limit(docker_runtime: DockerRuntime, small: str) -> None:
    bomb = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n"
        "        n += 1\n"
        "except OSError as e:\n"
        "    print('fork refused after', n, e.errno)\n"
    )
    res = await docker_runtime.exec(small, ExecRequest(["python3", "-c", bomb], timeout=20))
    assert b"fork refused after" in res.stdout
    forked = int(res.stdout.split()[3])
    assert forked < 64
    # the tree is gone once the command is killed; the sandbox is usable again
    await docker_runtime.exec(small, ExecRequest("pkill sleep; true"))


async def test_no_network_by_default(docker_runtime: DockerRuntime, small: str) -> None:
    res = await docker_runtime.exec(small, ExecRequest("cat /proc/net/dev; ls /sys/class/net"))
    interfaces = res.stdout.decode().split()
    assert "eth0" not in " ".join(interfaces)
    probe = await docker_runtime.exec(
        small,
        ExecRequest(["python3", "-c", "import socket; socket.create_connection(('1.1.1.1', 53), 2)"]),
    )
    assert probe.exit_code != 0
    assert b"Network is unreachable" in probe.stderr or b"OSError" in probe.stderr


async def test_no_docker_socket_no_capabilities_no_root(docker_runtime: DockerRuntime, small: str) -> None:
    res = await docker_runtime.exec(
        small,
        ExecRequest(
            "ls /var/run/docker.sock /run/docker.sock 2>&1; grep -E '^Cap(Eff|Prm|Bnd)' "
            "/proc/self/status; grep NoNewPrivs /proc/self/status; id -u"
        ),
    )
    out = res.stdout.decode()
    assert out.count("No such file or directory") == 2
    for line in out.splitlines():
        if line.startswith(("CapEff", "CapPrm", "CapBnd")):
            assert line.split()[1] == "0000000000000000", line
    assert "NoNewPrivs:\t1" in out
    assert out.strip().splitlines()[-1] == "1000"


async def test_read_only_root_keeps_a_writable_workspace(docker_runtime: DockerRuntime) -> None:
    ref = await docker_runtime.create(
        SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX, read_only_root=True)
    )
    try:
        res = await docker_runtime.exec(
            ref,
            ExecRequest(
                "touch /etc/x 2>&1; echo ok > /workspace/f && cat /workspace/f; touch /tmp/t && echo tmp"
            ),
        )
        assert b"Read-only file system" in res.stdout
        assert b"ok\ntmp\n" in res.stdout
    finally:
        await docker_runtime.remove(ref)
