"""Listing a workspace and exporting some of its entries, on every runtime (the same suite
as :mod:`test_contract`): the pieces incremental snapshots are made of."""

from __future__ import annotations

import io
import tarfile

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.base import ExecRequest, SandboxRuntime
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
