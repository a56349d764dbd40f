"""Listing a workspace and exporting some of its entries, on every runtime (the same suite
as :mod:`test_contract`): the pieces incremental snapshots are made of."""

from __future__ import annotations

import hashlib
import io
import secrets
import tarfile
from typing import NoReturn

import pytest

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.base import LABEL_SANDBOX, ExecRequest, SandboxRuntime, SandboxSpec
from sandlot.runtime.channels import INLINE_MAX
from sandlot.runtime.docker import DockerRuntime
from tests.conftest import BUSYBOX
from tests.integration.runtime.test_contract import WS, ref, runtime  # noqa: F401 (fixtures)

WEIRD = "new\nline \udcff"


async def sh(rt: SandboxRuntime, ref: str, script: str) -> None:  # noqa: F811
    res = await rt.exec(ref, ExecRequest(script, cwd=WS))
    assert res.exit_code == 0, res.stderr


async def test_a_listing_names_every_entry_and_its_key_follows_changes(
    runtime: SandboxRuntime,  # noqa: F811
    ref: str,  # noqa: F811
) -> None:
    await sh(runtime, ref, "mkdir d; printf 12345 > \"d/$(printf 'new\\nline \\377')\"; ln -s d l; mkfifo p")
    async with runtime.scan_workspace(ref, WS) as scan:
        found = scan.listing
    assert found is not None
    by_name = {e.name: e for e in found}
    assert {n: (e.kind, e.size if e.kind == "file" else None) for n, e in by_name.items()} == {
        "d": ("dir", None),
        f"d/{WEIRD}": ("file", 5),
        "l": ("link", None),
    }  # the FIFO is left out: no snapshot keeps one
    await sh(runtime, ref, "printf 54321 > \"d/$(printf 'new\\nline \\377')\"")  # same size
    async with runtime.scan_workspace(ref, WS) as scan:
        again = {e.name: e for e in scan.listing or []}
    assert again[f"d/{WEIRD}"].key != by_name[f"d/{WEIRD}"].key
    assert again["l"].key == by_name["l"].key


async def test_a_listing_that_may_miss_entries_is_none(runtime: SandboxRuntime, ref: str) -> None:  # noqa: F811
    await sh(runtime, ref, "mkdir -p hidden/in && echo x > hidden/in/f && chmod 000 hidden")
    async with runtime.scan_workspace(ref, WS) as scan:
        found = scan.listing
    # the sandbox user cannot read "hidden": a listing made as that user says it may be
    # incomplete; one made with more rights (the local runtime's, by descriptor) has it all
    assert found is None or {"hidden", "hidden/in", "hidden/in/f"} <= {e.name for e in found}
    await sh(runtime, ref, "chmod 700 hidden")


async def test_exporting_named_entries_gives_those_alone(runtime: SandboxRuntime, ref: str) -> None:  # noqa: F811
    await sh(
        runtime, ref, "mkdir d; echo one > d/a; echo two > \"$(printf 'new\\nline \\377')\"; ln -s d/a l"
    )
    async with runtime.scan_workspace(ref, WS) as scan:
        data = b"".join([c async for c in scan.export([WEIRD, "l"])])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|", ignore_zeros=True) as tar:
        members = {}
        for m in tar:
            handle = tar.extractfile(m) if m.isreg() else None
            members[m.name.removeprefix("./")] = handle.read() if handle else m.linkname
    assert members == {WEIRD: b"two\n", "l": "d/a"}

    try:
        async with runtime.scan_workspace(ref, WS) as scan:
            data = b"".join([c async for c in scan.export(["gone", "d/a"])])
    except InvalidInput:
        return  # the stream failed: the caller reads the whole workspace instead
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|", ignore_zeros=True) as tar:
        assert "gone" not in {m.name.removeprefix("./") for m in tar}


async def test_an_export_too_large_to_come_back_whole_is_streamed(
    runtime: SandboxRuntime,  # noqa: F811
    ref: str,  # noqa: F811
) -> None:
    """On a runtime with a shell on the sandbox the listing and a small export come through
    it; an export larger than a program may give back whole goes through a process of its own
    and is as exact."""
    size = INLINE_MAX + (1 << 20)
    await sh(runtime, ref, f"head -c {size} /dev/urandom > big; echo small > s; md5sum big > sum")
    async with runtime.scan_workspace(ref, WS) as scan:
        assert scan.listing is not None
        assert {e.name: e.size for e in scan.listing}["big"] == size
        data = b"".join([c async for c in scan.export(["big", "s"])])
    with tarfile.open(fileobj=io.BytesIO(data), mode="r|", ignore_zeros=True) as tar:
        members = {}
        for m in tar:
            handle = tar.extractfile(m)
            assert handle is not None
            members[m.name.removeprefix("./")] = handle.read()
    assert members["s"] == b"small\n" and len(members["big"]) == size
    res = await runtime.exec(ref, ExecRequest("cat sum", cwd=WS))
    assert hashlib.md5(members["big"]).hexdigest() == res.stdout.split()[0].decode()


async def test_in_a_sandboxs_idle_shell_a_small_scan_needs_no_exec(
    channel_runtime: DockerRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The listing and an export that fits come through the shell this process holds on the
    sandbox: no docker exec (they cost ~60 ms each of a suspend)."""
    rt = channel_runtime
    sandbox_id = f"sbx_{secrets.token_hex(8)}"
    box = await rt.create(SandboxSpec(sandbox_id, "ten_test", BUSYBOX, labels={LABEL_SANDBOX: sandbox_id}))
    shells = rt.test_shells  # type: ignore[attr-defined]
    try:
        await shells.warm(sandbox_id, box)
        await sh(rt, box, "mkdir d; echo one > d/a; ln -s d/a l")

        async def no_exec(*args: object, **kwargs: object) -> NoReturn:
            raise AssertionError("a docker exec was made")

        with monkeypatch.context() as m:
            m.setattr(DockerRuntime, "attach", no_exec)
            m.setattr(DockerRuntime, "run_quick", no_exec)
            async with rt.scan_workspace(box, WS) as scan:
                assert {e.name for e in scan.listing or []} == {"d", "d/a", "l"}
                data = b"".join([c async for c in scan.export(["d/a"])])
        with tarfile.open(fileobj=io.BytesIO(data), mode="r|", ignore_zeros=True) as tar:
            assert [m.name.removeprefix("./") for m in tar] == ["d/a"]
    finally:
        await shells.drop_warm(sandbox_id)
        await rt.remove(box)
