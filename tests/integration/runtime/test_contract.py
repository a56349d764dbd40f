"""One suite, every runtime: Docker (real engine) and local (real processes here, under
bubblewrap, from a relative data directory). Files are attacked the way a hostile tenant
would: names with newlines, planted links, read-only files, uploads cut short."""

from __future__ import annotations

import asyncio
import io
import os
import secrets
import tarfile
import time
from collections.abc import AsyncIterator

import pytest

from sandlot.domain.errors import (
    ImageNotFound,
    InvalidInput,
    NotFound,
    PathOutsideWorkspace,
    PayloadTooLarge,
)
from sandlot.runtime.archives import ArchiveReport, check_archive
from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxRuntime, SandboxSpec
from sandlot.runtime.channels import INLINE_MAX
from sandlot.runtime.docker import DockerRuntime
from tests.conftest import BUSYBOX, RUNTIME_INSTANCE

WS = "/workspace"


@pytest.fixture(params=["docker", "local", "channel"], scope="module")
def runtime(request: pytest.FixtureRequest) -> SandboxRuntime:
    return request.getfixturevalue(f"{request.param}_runtime")


@pytest.fixture
async def ref(runtime: SandboxRuntime) -> AsyncIterator[str]:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )
    shells = getattr(runtime, "test_shells", None)
    if shells is not None:
        await shells.warm(sandbox_id, ref)
        assert shells.channel(ref) is not None
    yield ref
    if shells is not None:
        await shells.drop_warm(sandbox_id)
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


async def _chunks(data: bytes, size: int = 1 << 16) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def write(runtime: SandboxRuntime, ref: str, path: str, data: bytes) -> None:
    await runtime.write_file(ref, f"{WS}/{path}", WS, _chunks(data), len(data))


async def read(runtime: SandboxRuntime, ref: str, path: str, limit: int = 1 << 30) -> bytes:
    return await (await runtime.read_file(ref, f"{WS}/{path}", WS, limit)).read_all()


async def sh(runtime: SandboxRuntime, ref: str, command: str) -> bytes:
    res = await runtime.exec(ref, ExecRequest(command))
    assert res.exit_code == 0, res
    return res.stdout


async def test_file_round_trip_is_byte_identical(runtime: SandboxRuntime, ref: str) -> None:
    data = os.urandom(10 * 1024 * 1024)
    await write(runtime, ref, "deep/er/blob.bin", data)
    found = await runtime.read_file(ref, f"{WS}/deep/er/blob.bin", WS, 1 << 30)
    assert found.size == len(data) and await found.read_all() == data
    assert (await sh(runtime, ref, "wc -c < deep/er/blob.bin")).strip() == b"10485760"


async def test_small_files_round_trip_exactly_every_byte(runtime: SandboxRuntime, ref: str) -> None:
    """Every byte value, an empty file, and sizes around the base64 line length (the channel
    sends small input inline as base64 in the shell's own input)."""
    for size in (0, 1, 56, 57, 58, 76, 77, 4095, 65537):
        data = (bytes(range(256)) * (size // 256 + 1))[:size]
        await write(runtime, ref, f"s{size}", data)
        assert await read(runtime, ref, f"s{size}") == data
    await write(runtime, ref, "eof-marker", b"__SL_\n__SL_00 0\nEOF\n'\n")
    assert await read(runtime, ref, "eof-marker") == b"__SL_\n__SL_00 0\nEOF\n'\n"


async def test_through_an_idle_shell_files_and_programs_cost_no_exec(
    channel_runtime: DockerRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the channel is for: with an idle shell of this process's on the sandbox, a small
    file's write and read, and a program, start no process through the engine; a file over
    the inline limit, or anything while a command runs in the shell, still does."""
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await channel_runtime.create(SandboxSpec(sandbox_id, "ten_test", BUSYBOX))
    shells = channel_runtime.test_shells  # type: ignore[attr-defined]
    try:
        await shells.warm(sandbox_id, ref)
        execs: list[list[str]] = []
        attach = channel_runtime.attach

        async def counted(ref: str, argv: list[str], **kw: object) -> object:
            execs.append(list(argv))
            return await attach(ref, argv, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(channel_runtime, "attach", counted)
        data = os.urandom(1 << 20)
        await write(channel_runtime, ref, "one.bin", data)
        assert await read(channel_runtime, ref, "one.bin") == data
        res = await channel_runtime.run_program(ref, 'wc -c < "$1"', [f"{WS}/one.bin"])
        assert (res.exit_code, res.stdout.strip()) == (0, b"1048576")
        assert execs == []
        big = os.urandom(INLINE_MAX + 1)
        await write(channel_runtime, ref, "big.bin", big)
        assert await read(channel_runtime, ref, "big.bin") == big
        assert len(execs) == 2  # streamed through a process of its own each way
        session_shell = shells.get("ses_x", ref, sandbox_id)
        busy = asyncio.ensure_future(
            session_shell.run("sleep 0.5", timeout=5, silence_timeout=None, output_limit=1024)
        )
        await asyncio.sleep(0.1)
        assert await read(channel_runtime, ref, "one.bin") == data  # beside the command
        assert len(execs) == 3
        await busy
    finally:
        await shells.close("ses_x")
        await shells.drop_warm(sandbox_id)
        await channel_runtime.remove(ref)


async def test_symlinks_pointing_out_are_refused_both_ways(runtime: SandboxRuntime, ref: str) -> None:
    await sh(runtime, ref, "ln -s /etc out; ln -s /etc/passwd pw; ln -s /nope/x dangling; ln -s .. up")
    for path in ("pw", "out/passwd", "dangling", "up/x", "up/workspace/../etc/passwd"):
        with pytest.raises(PathOutsideWorkspace):
            await read(runtime, ref, path)
        with pytest.raises(PathOutsideWorkspace):
            await write(runtime, ref, path, b"x")


async def test_a_newline_in_a_name_cannot_steer_a_write_outside(runtime: SandboxRuntime, ref: str) -> None:
    # the report: a directory named with newlines beside a link to /etc made a write land on
    # /etc/passwd (the path resolver's line protocol broke)
    await sh(runtime, ref, "mkdir -p 'a\n/etc\nfile\n0' && ln -s /etc esc && ln -s a inside")
    before = await sh(runtime, ref, "cat /etc/passwd")
    for path in ("a\n/etc\nfile\n0/../../esc/passwd", "a\n/../esc/passwd", "esc/passwd"):
        with pytest.raises((PathOutsideWorkspace, InvalidInput)):
            await write(runtime, ref, path, b"root::0:0::/:/bin/sh\n")
    assert await sh(runtime, ref, "cat /etc/passwd") == before
    # names with newlines, and links that stay inside, work
    await write(runtime, ref, "a\n/etc\nfile\n0/x", b"newline dir")
    await write(runtime, ref, "inside/y", b"through a link")
    assert await read(runtime, ref, "a/y") == b"through a link"
    assert await read(runtime, ref, "a\n/etc\nfile\n0/x") == b"newline dir"


async def test_writes_honour_the_sandbox_users_permissions(runtime: SandboxRuntime, ref: str) -> None:
    await sh(runtime, ref, "echo keep > ro.txt && chmod 444 ro.txt && echo s > secret && chmod 000 secret")
    await sh(runtime, ref, "mkdir locked && chmod 555 locked && echo x > mode.sh && chmod 750 mode.sh")
    with pytest.raises(InvalidInput, match="permission"):
        await write(runtime, ref, "ro.txt", b"overwritten")
    with pytest.raises(InvalidInput, match="permission"):
        await write(runtime, ref, "locked/new", b"x")
    with pytest.raises(InvalidInput, match="permission"):
        await read(runtime, ref, "secret")
    await write(runtime, ref, "mode.sh", b"echo replaced")
    listing = await sh(runtime, ref, "cat ro.txt; stat -c %a ro.txt mode.sh")
    assert listing == b"keep\n444\n750\n"


async def test_an_upload_cut_short_leaves_the_old_file(runtime: SandboxRuntime, ref: str) -> None:
    await write(runtime, ref, "f", b"old content")
    with pytest.raises(InvalidInput, match="cut short"):
        await runtime.write_file(ref, f"{WS}/f", WS, _chunks(b"new"), 100)

    async def failing() -> AsyncIterator[bytes]:
        yield b"half of it"
        raise ConnectionResetError("the client went away")

    with pytest.raises(ConnectionResetError):
        await runtime.write_file(ref, f"{WS}/f", WS, failing(), 100)
    assert await read(runtime, ref, "f") == b"old content"
    assert b".sandlot-upload" not in await sh(runtime, ref, "ls -A")


async def test_reading_a_missing_or_too_large_file_fails_clearly(runtime: SandboxRuntime, ref: str) -> None:
    with pytest.raises(NotFound):
        await read(runtime, ref, "missing", 100)
    await write(runtime, ref, "big", b"x" * 1000)
    with pytest.raises(PayloadTooLarge):
        await read(runtime, ref, "big", 100)
    await sh(runtime, ref, "mkdir d; mkfifo fifo")
    for path in ("d", "fifo"):
        with pytest.raises(InvalidInput):
            await read(runtime, ref, path)


async def test_workspace_archives_round_trip_and_stream(runtime: SandboxRuntime, ref: str) -> None:
    await sh(runtime, ref, "mkdir -p src/deep && echo a > src/a && ln -s src/a link && mkfifo pipe")
    await sh(runtime, ref, "head -c 3000000 /dev/urandom > src/deep/blob && chmod 640 src/a")
    chunks = [c async for c in runtime.export_workspace(ref, WS, 1 << 30)]
    assert len(chunks) > 1  # streamed, not one buffer
    archive = b"".join(chunks)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        names = {m.name: m for m in tar.getmembers()}
    assert {"src", "src/a", "src/deep/blob", "link"} <= set(names) and "pipe" not in names
    assert names["link"].linkname == "src/a" and names["src/a"].mode & 0o777 == 0o640

    other = await runtime.create(SandboxSpec(f"sbx_{secrets.token_hex(8)}", "ten_test", BUSYBOX))
    try:
        report = ArchiveReport()
        out = io.BytesIO()
        check_archive(io.BytesIO(archive), out, limit=1 << 30, strict=False, report=report)
        await runtime.import_workspace(other, WS, _chunks(out.getvalue()), report, check_links=False)
        got = await runtime.exec(other, ExecRequest("cat link; stat -c %a src/a; md5sum src/deep/blob"))
        want = await runtime.exec(ref, ExecRequest("cat link; stat -c %a src/a; md5sum src/deep/blob"))
        assert got.stdout == want.stdout and got.stdout.startswith(b"a\n640\n")
    finally:
        await runtime.remove(other)
    with pytest.raises(PayloadTooLarge):
        async for _ in runtime.export_workspace(ref, WS, 1 << 20):
            pass


async def test_an_archive_cannot_follow_a_link_planted_in_the_workspace(
    runtime: SandboxRuntime, ref: str
) -> None:
    await sh(runtime, ref, "ln -s /etc esc && mkdir -p ok/sub && ln -s /tmp ok/sub/out")
    for name in ("esc/passwd", "ok/sub/out/x"):
        tar = io.BytesIO()
        with tarfile.open(fileobj=tar, mode="w") as t:
            info = tarfile.TarInfo(name)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
        report, out = ArchiveReport(), io.BytesIO()
        check_archive(io.BytesIO(tar.getvalue()), out, limit=1 << 20, strict=True, report=report)
        with pytest.raises(PathOutsideWorkspace):
            await runtime.import_workspace(ref, WS, _chunks(out.getvalue()), report, check_links=True)
    assert b"x" not in await sh(runtime, ref, "ls /tmp; ls ok/sub/out/ 2>/dev/null; true")


async def test_a_closed_terminal_leaves_no_process(runtime: SandboxRuntime, ref: str) -> None:
    marker = f"sleep {secrets.randbelow(9000) + 1000}"
    for _ in range(3):
        term = await runtime.open_pty(ref, ["/bin/sh"], cols=80, rows=24)
        await term.write(f"{marker} &\n".encode())
        seen = b""
        while b"$" not in seen and b"#" not in seen:
            chunk = await term.read()
            assert chunk is not None
            seen += chunk
        await term.close()
    deadline = time.monotonic() + 5
    while marker.encode() in (left := await sh(runtime, ref, "ps -o args 2>/dev/null || ps")):
        assert time.monotonic() < deadline, left
        await asyncio.sleep(0.2)


async def test_unknown_image_is_refused(runtime: SandboxRuntime) -> None:
    assert not await runtime.image_exists("sandlot/does-not-exist:1")
    with pytest.raises(ImageNotFound):
        await runtime.create(SandboxSpec("sbx_nope", "ten_test", "sandlot/does-not-exist:1"))


async def test_sandboxes_are_listed_by_label_and_gone_after_remove(runtime: SandboxRuntime) -> None:
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    ref = await runtime.create(
        SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id})
    )
    owned = {o.ref: o for o in await runtime.list_owned(RUNTIME_INSTANCE)}
    assert owned[ref].labels[LABEL_SANDBOX] == sandbox_id and owned[ref].running
    await runtime.remove(ref)
    assert ref not in {o.ref for o in await runtime.list_owned(RUNTIME_INSTANCE)}
    assert not await runtime.is_running(ref)
    await runtime.remove(ref)  # removing twice is fine


async def test_usage_sees_a_spinner_and_the_memory_it_holds(runtime: SandboxRuntime, ref: str) -> None:
    idle = await runtime.usage(ref)
    assert idle.memory_limit == 512 << 20
    # one process spins; tail holds a 40 MB line (no newline yet) until its input ends
    hog = await runtime.open_process(
        ref,
        [
            "/bin/sh",
            "-c",
            "(while :; do :; done) & (head -c 40000000 /dev/zero; sleep 60) | tail & "
            "sleep 2; echo held; wait",
        ],
    )
    try:
        seen = b""
        while b"held" not in seen:
            got = await asyncio.wait_for(hog.read(), 30)
            assert got is not None, seen
            seen += got[1]
        busy = await runtime.usage(ref)
        assert busy.cpu_percent > 10, busy
        assert busy.memory_bytes > idle.memory_bytes + (30 << 20), (idle, busy)
        assert busy.processes >= idle.processes + 2, (idle, busy)
    finally:
        await hog.close()
