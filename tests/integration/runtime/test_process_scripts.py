"""The background process programs (runtime/scripts.py) on every runtime: a process's stdin is a
pipe the next program writes to and closes, its output reaches the file while it runs, and a
terminal is opened where the sandbox has ``script`` (the local runtime's host) and refused where
it has not (the busybox image)."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import AsyncIterator

import pytest

from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxRuntime, SandboxSpec
from sandlot.runtime.process_scripts import PROC_READ, PROC_START, PROC_STDIN
from sandlot.runtime.scripts import BYTE_COPY
from tests.conftest import BUSYBOX

pytestmark = pytest.mark.timeout(90)


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


async def sh(
    runtime: SandboxRuntime, ref: str, script: str, *args: str, stdin: bytes | None = None
) -> tuple[int | None, bytes]:
    res = await runtime.exec(
        ref, ExecRequest(["/bin/sh", "-c", script, "sh", *args], stdin=stdin, timeout=15)
    )
    return res.exit_code, res.stdout


async def output_until(runtime: SandboxRuntime, ref: str, d: str, needle: bytes) -> bytes:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        _, out = await sh(runtime, ref, PROC_READ, d, "0", "100000")
        if needle in out:
            return out
        await asyncio.sleep(0.1)
    pytest.fail(f"{needle!r} never appeared")


async def test_stdin_is_a_pipe_that_is_written_and_closed(runtime: SandboxRuntime, ref: str) -> None:
    d = f"{runtime.process_dir(ref)}/p1"
    code, pid = await sh(
        runtime, ref, PROC_START, d, "100000", 'read a; echo "got $a"; cat; echo end', "", "stdin"
    )
    assert code == 0 and pid.strip().isdigit()
    assert (await sh(runtime, ref, PROC_STDIN, d, "0", stdin=b"one\n"))[0] == 0
    await output_until(runtime, ref, d, b"got one\n")  # while it still runs
    assert (await sh(runtime, ref, PROC_STDIN, d, "1", stdin=b"two"))[0] == 0
    assert await output_until(runtime, ref, d, b"end\n") == b"got one\ntwoend\n"


async def test_a_terminal_opens_where_script_is_and_is_refused_elsewhere(
    runtime: SandboxRuntime, ref: str
) -> None:
    has_script = (await sh(runtime, ref, "command -v script"))[0] == 0  # busybox has none
    d = f"{runtime.process_dir(ref)}/p2"
    code, _ = await sh(runtime, ref, PROC_START, d, "100000", "tty; read a; echo got $a", "", "tty")
    if not has_script:
        assert code == 4
        assert (await sh(runtime, ref, '[ -e "$1" ]', d))[0] != 0  # nothing was started
        return
    assert code == 0
    assert (await sh(runtime, ref, PROC_STDIN, d, "0", stdin=b"x\n"))[0] == 0
    out = await output_until(runtime, ref, d, b"got x")
    # a terminal: tty names it, the input is echoed (CR LF) and reaches the program; input
    # written before the terminal was set up may be echoed ahead of tty's line (seen under load)
    assert b"/dev/pts/" in out and b"got x\r\n" in out
    assert b"x\r\n" in out.replace(b"got x\r\n", b"")


@pytest.mark.parametrize("dd", ["", "0", "1"], ids=["probed", "dd", "head"])
async def test_byte_copies_take_exactly_what_is_asked_with_dd_or_without(
    runtime: SandboxRuntime, ref: str, dd: str
) -> None:
    """``__sl_take N`` takes N bytes and, through ``dd``, leaves what follows in its input;
    ``__sl_copy`` copies a byte range, through ``dd`` or, where it cannot count bytes,
    ``head``/``tail``; the probe finds that busybox's and coreutils' dd can. (busybox's
    ``head -c`` reads past N from a pipe: the shell sends nothing after a program's input
    until the program has ended, and with dd it no longer matters.)"""
    data = bytes(range(256)) * 1024  # 256 KiB: several dd blocks
    script = (
        BYTE_COPY
        + ('__sl_dd="$1"; ' if dd else "unset __sl_dd; ")
        + '__sl_take 200000 > "$2/a"; printf %s "$__sl_dd" > "$2/dd"; cat > "$2/rest";'
        + ' __sl_copy "$2/a" 70000 100000 > "$2/b"'
    )
    d = f"{runtime.state_dir(ref)}/take"
    assert (await sh(runtime, ref, f"mkdir -p {d}"))[0] == 0
    code, _ = await sh(runtime, ref, script, dd, d, stdin=data)
    assert code == 0
    read = {n: (await sh(runtime, ref, f"cat {d}/{n}"))[1] for n in ("a", "rest", "b", "dd")}
    assert read["a"] == data[:200000]
    assert read["rest"] == data[200000:] or dd == "1"
    assert read["b"] == data[70000:170000]
    assert read["dd"] == (dd.encode() or b"0")


async def test_a_start_is_no_room_only_when_the_disk_is_full(runtime: SandboxRuntime, ref: str) -> None:
    """``!7`` (507 disk_full) is for a full disk; a directory the sandbox user broke is ``!1``."""
    d = f"{runtime.process_dir(ref)}/p3"
    assert (await sh(runtime, ref, f"mkdir -p {d}/out"))[0] == 0  # a directory where out goes
    code, out = await sh(runtime, ref, PROC_START, d, "1000", "echo hi")
    assert (code, out.strip()) == (1, b"!1")
