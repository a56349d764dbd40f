"""The programs that only touch files (the path walk, read, write, list, stat, mkdir, remove,
move, the byte copy), run as a sandbox runs them (``sh -c PROGRAM sh ARGS...``) against a
temporary workspace, under dash with the host's tools and under busybox's sh with busybox's
applets alone: names with newlines and bytes that are not UTF-8 go through whole, and no planted
link, climbing link or ``..`` leads out (exit 10), with no Docker at all."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandlot.runtime.file_scripts import (
    FILE_READ,
    FILE_WRITE,
    FS_LIST,
    FS_MKDIR,
    FS_MOVE,
    FS_REMOVE,
    FS_STAT,
    octal,
)

HOSTILE = "line\nbreak \udcff-dash 'q\"$(x)"  # a newline, a lone non-UTF-8 byte, quotes


@pytest.fixture(params=["dash", "busybox"], scope="module")
def shell(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], str]:
    """The shell and the PATH it runs with: busybox's own applets only, for busybox."""
    if request.param == "dash":
        assert shutil.which("dash"), "dash is missing"
        return ["dash", "-c"], os.environ["PATH"]
    busybox = shutil.which("busybox")
    assert busybox, "busybox is missing (scripts/test.sh installs busybox-static)"
    applets = tmp_path_factory.mktemp("applets")
    subprocess.run([busybox, "--install", "-s", str(applets)], check=True)
    return [str(applets / "sh"), "-c"], str(applets)


def run(shell: tuple[list[str], str], program: str, *args: str, stdin: bytes = b"") -> tuple[int, bytes]:
    argv, path = shell
    done = subprocess.run(
        [*argv, program, "sh", *args], input=stdin, capture_output=True, timeout=30, env={"PATH": path}
    )
    return done.returncode, done.stdout


def name_bytes(name: str) -> bytes:
    return name.encode("utf-8", "surrogateescape")


def test_a_hostile_name_is_written_read_listed_and_removed_whole(
    shell: tuple[list[str], str], tmp_path: Path
) -> None:
    ws = str(tmp_path)
    body = b"\x00\xffbytes\n"
    assert run(shell, FS_MKDIR, ws, octal(f"d/{HOSTILE}"))[0] == 0
    rel = octal(f"d/{HOSTILE}/{HOSTILE}")
    assert run(shell, FILE_WRITE, ws, rel, str(len(body)), stdin=body)[0] == 0
    assert (
        tmp_path / "d" / os.fsdecode(name_bytes(HOSTILE)) / os.fsdecode(name_bytes(HOSTILE))
    ).read_bytes() == body
    code, out = run(shell, FILE_READ, ws, rel, "1000")
    assert (code, out) == (0, b"K%d\n" % len(body) + body)
    code, out = run(shell, FS_LIST, ws, octal(f"d/{HOSTILE}"))
    assert code == 0 and out.split(b"\0")[:3] == [b"file", str(len(body)).encode(), name_bytes(HOSTILE)]
    code, out = run(shell, FS_STAT, ws, rel)
    assert code == 0 and out.split(b"\0")[:2] == [b"file", str(len(body)).encode()]
    assert run(shell, FS_MOVE, ws, rel, octal("moved"))[0] == 0
    assert (tmp_path / "moved").read_bytes() == body
    assert run(shell, FS_REMOVE, ws, octal("d"))[0] == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moved"]


def test_a_write_cut_short_leaves_nothing_and_a_too_large_read_is_refused(
    shell: tuple[list[str], str], tmp_path: Path
) -> None:
    ws = str(tmp_path)
    assert run(shell, FILE_WRITE, ws, octal("f"), "10", stdin=b"four")[0] == 21
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "big").write_bytes(b"x" * 100)
    assert run(shell, FILE_READ, ws, octal("big"), "99")[0] == 18
    assert run(shell, FILE_READ, ws, octal("missing"), "99")[0] == 15
    assert run(shell, FILE_READ, ws, octal("."), "99")[0] == 11


@pytest.mark.parametrize(
    "plant",
    [
        ("out", "/etc"),  # a planted link to an absolute place outside
        ("up", ".."),  # a climbing link
        ("deep", "a/../../.."),  # climbing through a name that is not there yet
    ],
    ids=["absolute", "climbing", "climbing-through"],
)
def test_no_link_and_no_dotdot_leads_out(
    shell: tuple[list[str], str], tmp_path: Path, plant: tuple[str, str]
) -> None:
    ws = tmp_path / "ws"
    (ws / "a").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("s")
    link, target = plant
    (ws / link).symlink_to(target)
    for rel in (f"{link}/secret", f"{link}/outside/secret", f"{link}/passwd"):
        assert run(shell, FILE_READ, str(ws), octal(rel), "1000")[0] == 10, rel
        assert run(shell, FILE_WRITE, str(ws), octal(rel), "1", stdin=b"x")[0] == 10, rel
    assert run(shell, FILE_READ, str(ws), octal("../outside/secret"), "1000")[0] == 10
    assert run(shell, FS_MKDIR, str(ws), octal(f"{link}/made"))[0] == 10
    assert not (outside / "made").exists() and (outside / "secret").read_text() == "s"
    assert run(shell, FS_REMOVE, str(ws), octal(link))[0] == 0  # the link itself, not its target
    assert (outside / "secret").exists()
