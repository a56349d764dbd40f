"""What a local sandbox (bubblewrap, the service running as root) can and cannot do to this
host: it runs as a host user of its own, reaches nothing of the service's, and its tricks
with links in its own workspace get it nothing (the review's findings, each reproduced)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import secrets
import signal
import tarfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.base import ExecRequest, SandboxSpec
from sandlot.runtime.local import LocalRuntime
from sandlot.runtime.local_procs import processes_of
from tests.conftest import BUSYBOX

WS = "/workspace"


@pytest.fixture
async def ref(local_runtime: LocalRuntime) -> AsyncIterator[str]:
    ref = await local_runtime.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX))
    yield ref
    await local_runtime.remove(ref)


async def sh(runtime: LocalRuntime, ref: str, command: str, timeout: float = 30) -> bytes:
    res = await runtime.exec(ref, ExecRequest(command, timeout=timeout))
    return res.stdout + res.stderr


def _host_user(runtime: LocalRuntime, ref: str) -> int:
    return int(runtime._meta(ref)["uid"])  # type: ignore[call-overload]


async def test_each_sandbox_is_its_own_unprivileged_host_user(local_runtime: LocalRuntime, ref: str) -> None:
    other = await local_runtime.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX))
    try:
        uid, other_uid = _host_user(local_runtime, ref), _host_user(local_runtime, other)
        assert uid != other_uid and min(uid, other_uid) >= 200_000
        assert (await sh(local_runtime, ref, "id -u")).strip() == str(uid).encode()
        assert (await sh(local_runtime, ref, "echo x > mine; ls -ln mine")).split()[2] == str(uid).encode()
    finally:
        await local_runtime.remove(other)


async def test_a_sandbox_cannot_signal_this_hosts_processes(local_runtime: LocalRuntime, ref: str) -> None:
    # the review: the sandbox's user was this host's root, so it could kill the service
    victim = await asyncio.create_subprocess_exec("sleep", "300")
    try:
        said = await sh(local_runtime, ref, f"kill -9 {victim.pid} 2>&1; echo rc=$?")
        assert b"rc=1" in said, said
        assert victim.returncode is None
    finally:
        victim.send_signal(signal.SIGKILL)
        await victim.wait()


_PS = "for p in /proc/[0-9]*; do printf '%s ' \"${p#/proc/}\"; tr '\\0' ' ' < $p/cmdline; echo; done"


async def test_a_sandbox_sees_only_its_own_processes(local_runtime: LocalRuntime, ref: str) -> None:
    """#27 finding 4: a local sandbox's /proc was the host's: another tenant's command line
    (with a secret in it) and root's bwrap lines with host paths were readable."""
    other = await local_runtime.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_other", BUSYBOX))
    secret = f"s3cret{secrets.token_hex(6)}"
    try:
        await sh(local_runtime, other, f"(setsid sleep 300 {secret} >/dev/null 2>&1 &) ; true")
        await sh(local_runtime, ref, "(setsid sleep 299 >/dev/null 2>&1 &) ; true")
        seen = await sh(local_runtime, ref, _PS)
        assert secret.encode() not in seen, seen  # another sandbox's command line
        assert b"sleep 299" in seen  # its own background process
        assert b"pytest" not in seen and str(local_runtime._root).encode() not in seen, seen  # the host's
        assert b"sandlot" not in seen, seen  # nothing names the service or its data
        # its pids are its own and mean the same in every command: kill from a later one
        pid = (await sh(local_runtime, ref, "pgrep -f 'sleep 299' || pidof sleep")).split()[0]
        assert int(pid) < 100, seen
        await sh(local_runtime, ref, f"kill -9 {pid.decode()}")
        assert b"sleep 299" not in await sh(local_runtime, ref, _PS)
        # its init is root's and out of its reach; nothing of the namespace's leaks in
        said = await sh(local_runtime, ref, "kill -9 1; echo rc=$?; ls -l /proc/self/fd")
        assert b"rc=1" in said and b"pid:[" not in said, said
    finally:
        await local_runtime.remove(other)


async def test_a_sandboxs_processes_outlive_a_restarted_service_and_end_with_the_sandbox(
    local_runtime: LocalRuntime, tmp_path: Path
) -> None:
    root = tmp_path / "sandboxes"
    first = LocalRuntime(root, instance="restart")
    ref = await first.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX))
    await sh(first, ref, "(setsid sleep 298 >/dev/null 2>&1 &) ; true")
    await first.close()
    again = LocalRuntime(root, instance="restart")
    try:
        assert b"sleep 298" in await sh(again, ref, _PS)  # the same namespace, taken up again
        uid = _host_user(again, ref)
    finally:
        await again.remove(ref)
    assert not processes_of(uid)


async def test_the_sandboxs_environment_steers_no_program_with_privileges(
    local_runtime: LocalRuntime, ref: str, tmp_path: Path
) -> None:
    """The review of #27: the sandbox's environment was the launch's, so LD_PRELOAD of a file
    in the workspace ran in prlimit, bubblewrap and setpriv as root (LD_DEBUG shows which
    programs the dynamic loader ran for, LD_DEBUG_OUTPUT would have them write as root)."""
    mark = tmp_path / "written-as-root"
    env = {"LD_DEBUG": "libs", "LD_DEBUG_OUTPUT": str(mark), "BASH_ENV": f"{WS}/benv"}
    await sh(local_runtime, ref, "echo 'echo ran-as-$(id -u) > /tmp/benv-ran' > benv")
    res = await local_runtime.exec(ref, ExecRequest("cat /tmp/benv-ran 2>/dev/null; id -u", env=env))
    uid = str(_host_user(local_runtime, ref)).encode()
    assert not os.listdir(tmp_path)  # no privileged program wrote for it
    assert b"ran-as-0" not in res.stdout and res.stdout.split()[-1] == uid, res
    with_env = await local_runtime.exec(ref, ExecRequest("echo $LD_DEBUG $BASH_ENV", env=env))
    assert with_env.stdout.split()[-2:] == [b"libs", f"{WS}/benv".encode()]  # it still gets them


async def test_the_sandboxs_environment_is_in_no_command_line_of_the_host(
    local_runtime: LocalRuntime, ref: str
) -> None:
    """The second review: with the environment given as `env -i NAME=value...` after setpriv,
    its values were in the command line of root's bwrap for the command's whole life, which
    every user of the host can read. Names and values of any kind still arrive intact."""
    secret = f"hunter{secrets.token_hex(8)}"
    env = {"SECRET_TOKEN": secret, "MULTI": "a\nb=c", "UID": "7", "LD_LIBRARY_PATH": "/nowhere"}
    request = ExecRequest('sleep 2; printf \'%s|%s|%s\' "$SECRET_TOKEN" "$MULTI" "$LD_LIBRARY_PATH"', env=env)
    running = asyncio.ensure_future(local_runtime.exec(ref, request))
    await asyncio.sleep(1)
    seen = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError), open(f"/proc/{entry}/cmdline", "rb") as f:  # noqa: ASYNC230
            seen.append(f.read())
    res = await running
    assert not [line for line in seen if secret.encode() in line]
    assert res.stdout == f"{secret}|a\nb=c|/nowhere".encode(), res


async def test_the_reset_kills_what_escaped_the_command_tree(local_runtime: LocalRuntime, ref: str) -> None:
    marker = f"sleep {secrets.randbelow(9000) + 1000}"
    await sh(local_runtime, ref, f"setsid sh -c '{marker}' >/dev/null 2>&1 & sleep 0.2")
    uid = _host_user(local_runtime, ref)
    assert processes_of(uid)
    await local_runtime.reset(ref, WS)
    assert not processes_of(uid)


async def test_the_process_limit_holds(local_runtime: LocalRuntime) -> None:
    from sandlot.runtime.base import Limits

    ref = await local_runtime.create(
        SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX, limits=Limits(pids=16))
    )
    try:
        said = await sh(local_runtime, ref, "for i in $(seq 40); do sleep 5 & done 2>&1; wait; echo done")
        assert b"fork" in said.lower() or b"resource" in said.lower(), said
    finally:
        await local_runtime.remove(ref)


async def test_tmp_and_shm_are_sized_within_the_sandboxs_memory(local_runtime: LocalRuntime) -> None:
    from sandlot.runtime.base import Limits

    ref = await local_runtime.create(
        SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX, limits=Limits(memory_mb=64))
    )
    try:
        # each was half the host's RAM: a 256 MB sandbox wrote 1 GiB there (#27 finding 4)
        sizes = await sh(local_runtime, ref, "df -k /tmp /dev/shm | tail -n 2")
        assert [int(line.split()[1]) for line in sizes.splitlines()] == [32 * 1024, 16 * 1024], sizes
        said = await sh(local_runtime, ref, "dd if=/dev/zero of=/tmp/f bs=1M count=48 2>&1; echo rc=$?")
        assert b"No space left" in said and b"rc=1" in said, said
    finally:
        await local_runtime.remove(ref)


async def test_network_access_is_refused(local_runtime: LocalRuntime) -> None:
    with pytest.raises(InvalidInput, match="network"):
        await local_runtime.create(
            SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX, network=True)
        )


async def test_the_data_directory_is_the_services_alone(local_runtime: LocalRuntime, ref: str) -> None:
    assert (local_runtime._root.stat().st_mode & 0o777) == 0o700
    assert ((local_runtime._root / ref).stat().st_mode & 0o777) == 0o700


async def test_an_export_does_not_follow_a_directory_swapped_for_a_link(
    local_runtime: LocalRuntime, ref: str, tmp_path: Path
) -> None:
    # the review: swapping a directory for a link to a host directory while the export ran
    # put a root-only host file into the archive
    secret = tmp_path / "hostsecret"
    secret.mkdir()
    (secret / "secret.txt").write_text("host only")
    swapper = (
        "import ctypes, os, time\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "os.makedirs('d', exist_ok=True); open('d/mine.txt', 'w').write('mine')\n"
        f"os.symlink({str(secret)!r}, 's')\n"
        "end = time.time() + 8\n"
        "while time.time() < end:\n"
        "    libc.renameat2(-100, b'd', -100, b's', 2)\n"  # RENAME_EXCHANGE
        "    time.sleep(0.001)\n"
    )
    running = asyncio.ensure_future(
        local_runtime.exec(ref, ExecRequest(["python3", "-c", swapper], timeout=20))
    )
    await asyncio.sleep(0.5)
    try:
        for _ in range(20):
            archive = b"".join([c async for c in local_runtime.export_workspace(ref, WS, 1 << 30)])
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                for member in tar:
                    if member.isfile():
                        data = tar.extractfile(member)
                        assert data is not None and b"host only" not in data.read(), member.name
    finally:
        await running


async def test_a_write_never_sets_a_mode_through_a_link(
    local_runtime: LocalRuntime, ref: str, tmp_path: Path
) -> None:
    # the review: the upload's temporary name, swapped for a link while the body streamed,
    # made the service chmod a host file (to the old file's mode, setuid included)
    target = tmp_path / "target"
    target.write_text("host file")
    target.chmod(0o600)
    await sh(local_runtime, ref, "echo x > f && chmod 4777 f")
    swapper = (
        "import glob, os, time\n"
        "end = time.time() + 6\n"
        "while time.time() < end:\n"
        "    for t in glob.glob('.sandlot-upload-*'):\n"
        "        try:\n"
        "            os.unlink(t)\n"
        f"            os.symlink({str(target)!r}, t)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    running = asyncio.ensure_future(
        local_runtime.exec(ref, ExecRequest(["python3", "-c", swapper], timeout=20))
    )
    await asyncio.sleep(0.3)

    async def slowly() -> AsyncIterator[bytes]:
        for _ in range(10):
            yield b"x" * 100
            await asyncio.sleep(0.2)

    try:
        with pytest.raises(Exception):  # noqa: B017 - the write may or may not go through
            await local_runtime.write_file(ref, f"{WS}/f", WS, slowly(), 1000)
            raise RuntimeError("written")
    finally:
        await running
    assert (target.stat().st_mode & 0o7777) == 0o600 and target.read_text() == "host file"
