"""Content-addressed snapshots without a sandbox: the listing's parsing, the manifest's stored
form, the archive rebuilt from a manifest (and its checks), reading an archive into staged
contents, and which entries a snapshot reads again."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from sandlot.domain.errors import InvalidInput, PathOutsideWorkspace, PayloadTooLarge, SandlotError
from sandlot.runtime.archives import ArchiveReport, diff
from sandlot.runtime.capture import Captured, capture_archive
from sandlot.runtime.listing import SETTLE_NS, Listed, parse_listing
from sandlot.runtime.manifest import (
    DIR,
    FILE,
    LINK,
    Item,
    content_archive,
    decode,
    display,
    encode,
    stat_cache,
)
from sandlot.services.capture import _plan
from tests.support.archives import make_tar

WEIRD = "new\nline \udcff\udcfe name"  # a newline and two bytes that are not UTF-8


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def stat_row(mode: int, ino: int, size: int, seconds: int, nanos: int) -> bytes:
    when = f"{seconds} 2026-11-23 15:45:34.{nanos:09d} +0000".encode()
    stamp = f"2026-11-23 15:45:34.{nanos:09d} +0000".encode()
    return f"{mode:x} {ino} {size} 1 ".encode() + when + b" " + str(seconds).encode() + b" " + stamp


def test_a_listing_keeps_every_name_byte_for_byte() -> None:
    mark = b"1795448734 2026-11-23 15:45:34.900000000 +0000\n"
    rows = [
        stat_row(0o40755, 2, 4096, 1795448734, 0),
        stat_row(0o100644, 3, 5, 1795448734, 100_000_000),
        stat_row(0o120777, 4, 1, 1795448734, 899_000_000),  # changed just before the mark
        stat_row(0o10644, 5, 0, 1795448734, 0),  # a FIFO
    ]
    names = [b"./d", b"./d/" + WEIRD.encode("utf-8", "surrogateescape"), b"./l", b"./f"]
    found = parse_listing(mark + b"\n".join(rows) + b"\n", b"\0".join(names) + b"\0")
    assert found is not None
    assert [(e.name, e.kind, e.mode, e.size) for e in found] == [
        ("d", DIR, 0o755, 4096),
        ("d/" + WEIRD, FILE, 0o644, 5),
        ("l", LINK, 0o777, 1),
    ]  # the FIFO is left out
    assert [e.settled for e in found] == [True, True, False]
    assert found[1].key != found[0].key and "100000000" in found[1].key  # nanoseconds count


@pytest.mark.parametrize(
    ("stdout", "stderr"),
    [
        (b"1 2026-01-01 00:00:00.0 +0000\n", b"./a\0"),  # a name without its numbers
        (b"1 2026-01-01 00:00:00.0 +0000\n" + stat_row(0o100644, 3, 5, 1, 0) + b"\n", b""),  # the reverse
        (b"1 2026-01-01 00:00:00.0 +0000\n" + stat_row(0o100644, 3, 5, 1, 0) + b"\n", b"a\0"),  # not ./
        (b"1 2026-01-01 00:00:00.0 +0000\nnot numbers at all\n", b"./a\0"),
        (b"1 2026-01-01 00:00:00.0 +0000\n" + stat_row(0o100644, 3, 5, 1, 0), b"./a\0"),  # cut short
        (b"", b""),
    ],
)
def test_a_listing_that_does_not_add_up_is_none(stdout: bytes, stderr: bytes) -> None:
    assert parse_listing(stdout, stderr) is None


def test_a_manifest_round_trips_names_and_targets_that_are_not_utf8() -> None:
    items = [
        Item("d", DIR, 0o700, 0, "", 5),
        Item("d/" + WEIRD, FILE, 0o600, 3, sha(b"abc"), 7, "k1"),
        Item("l\udcff", LINK, 0o777, 0, "../t\udcfe\n", 9, "k2"),
        Item('{"b": "x"}', FILE, 0o644, 0, sha(b""), 1),  # a name that looks like the encoding
    ]
    stored = json.loads(json.dumps(encode(items, sandbox="sbx_1")))  # what the database gives back
    assert decode(stored) == items
    assert set(stat_cache(stored, "sbx_1")) == {"d/" + WEIRD, "l\udcff"}
    assert stat_cache(stored, "sbx_other") == {}  # keys mean nothing on another sandbox


def test_diffs_compare_a_tar_snapshots_manifest_with_a_content_one() -> None:
    old = {"a": ["file", sha(b"1"), 1, 0o644, 5], "d": ["dir"], "gone": ["file", sha(b"x"), 1, 0o644, 5]}
    new = [
        Item("a", FILE, 0o644, 1, sha(b"2"), 5),
        Item("d", DIR, 0o755, 0, "", 99),
        Item("new", LINK, 0o777, 0, "a", 5),
    ]
    assert diff(old, display(new)) == {"added": ["new"], "modified": ["a"], "deleted": ["gone"]}
    assert diff(display(new), display(new)) == {"added": [], "modified": [], "deleted": []}


def rebuild(items: list[Item], blobs: dict[str, bytes], limit: int = 1 << 30) -> tuple[ArchiveReport, bytes]:
    report, out = ArchiveReport(), io.BytesIO()
    content_archive(items, lambda d: io.BytesIO(blobs[d]), out, limit=limit, report=report)
    return report, out.getvalue()


def test_an_archive_rebuilt_from_a_manifest_holds_the_workspace() -> None:
    data = b"hello\n" * 300
    items = [
        Item("x/" + WEIRD, FILE, 0o4755, len(data), sha(data), 1234),
        Item("x", DIR, 0o500, 0, "", 5),  # restricted: unpacked writable, restricted after
        Item("x/link", LINK, 0o777, 0, "/etc/passwd", 5),  # a restore keeps links as they were
        Item("empty", FILE, 0o600, 0, sha(b""), 5),
    ]
    report, tar_bytes = rebuild(items, {sha(data): data, sha(b""): b""})
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert list(members) == ["empty", "x", "x/link", "x/" + WEIRD]  # directories first
        assert members["x"].mode == 0o700 and report.dir_modes == {"x": 0o500}
        assert members["x/" + WEIRD].mode == 0o755  # no setuid bit
        assert members["x/link"].linkname == "/etc/passwd" and members["x/link"].uid == 1000
        handle = tar.extractfile("x/" + WEIRD)
        assert handle is not None and handle.read() == data
    assert report.bytes == len(data)


@pytest.mark.parametrize(
    ("items", "error"),
    [
        ([Item("../out", FILE, 0o644, 0, sha(b""), 0)], InvalidInput),
        ([Item("/etc/x", FILE, 0o644, 0, sha(b""), 0)], PathOutsideWorkspace),
        ([Item("a//b", FILE, 0o644, 0, sha(b""), 0)], InvalidInput),
        (
            [Item("l", LINK, 0o777, 0, "/etc", 0), Item("l/passwd", FILE, 0o644, 0, sha(b""), 0)],
            PathOutsideWorkspace,
        ),
        ([Item("dev", "chr", 0o644, 0, "", 0)], InvalidInput),
        ([Item("big", FILE, 0o644, 11, sha(b"x" * 11), 0)], PayloadTooLarge),
        ([Item("short", FILE, 0o644, 5, sha(b"abc"), 0)], SandlotError),  # the blob is damaged
    ],
)
def test_a_rebuilt_archive_is_checked_as_it_is_made(items: list[Item], error: type[Exception]) -> None:
    blobs = {sha(b""): b"", sha(b"x" * 11): b"x" * 11, sha(b"abc"): b"abc"}
    with pytest.raises(error):
        rebuild(items, blobs, limit=10)


def capture(data: bytes, tmp_path: Path, *, known: set[str] = frozenset(), limit: int = 1 << 30) -> Captured:  # type: ignore[assignment]
    captured = Captured()
    counter = iter(range(1000))
    capture_archive(
        io.BytesIO(data),
        captured,
        limit=limit,
        known=set(known),
        stage=lambda: tmp_path / f".s{next(counter)}.tmp",
    )
    return captured


def test_reading_an_archive_stages_each_new_content_once(tmp_path: Path) -> None:
    big = b"b" * ((1 << 20) + 5)  # above the in-memory size: streamed to its staging file
    data = make_tar(
        ("a", "file", b"same"),
        ("b", "file", b"same"),
        ("c", "file", b"known"),
        ("big", "file", big),
        ("big2", "file", big),
        ("h", "hard", "a"),
        ("s", "sym", "../anywhere"),
        ("p", "fifo", ""),
        ("d", "dir", ""),
    )
    captured = capture(data, tmp_path, known={sha(b"known")})
    assert {i.name: (i.kind, i.ref) for i in captured.items} == {
        "a": (FILE, sha(b"same")),
        "b": (FILE, sha(b"same")),
        "c": (FILE, sha(b"known")),
        "big": (FILE, sha(big)),
        "big2": (FILE, sha(big)),
        "h": (FILE, sha(b"same")),
        "s": (LINK, "../anywhere"),
        "d": (DIR, ""),
    }
    assert set(captured.staged) == {sha(b"same"), sha(big)}  # once each; the known one not at all
    assert captured.staged[sha(big)].path.read_bytes() == big
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(s.path.name for s in captured.staged.values())


def test_reading_an_archive_stops_at_the_limit(tmp_path: Path) -> None:
    with pytest.raises(PayloadTooLarge):
        capture(make_tar(("a", "file", b"x" * 6), ("b", "file", b"y" * 6)), tmp_path, limit=10)


def listed(name: str, kind: str, key: str, size: int = 1) -> Listed:
    return Listed(name, kind, 0o644, size, 5, key, True)


def test_only_entries_whose_key_changed_are_read_again() -> None:
    cache = {
        "same": Item("same", FILE, 0o644, 1, sha(b"s"), 5, "k1"),
        "changed": Item("changed", FILE, 0o644, 1, sha(b"c"), 5, "k2"),
        "link": Item("link", LINK, 0o777, 0, "same", 5, "k3"),
        "now_dir": Item("now_dir", FILE, 0o644, 1, sha(b"n"), 5, "k4"),
    }
    listing = [
        listed("same", FILE, "k1"),
        listed("changed", FILE, "k2-new"),
        listed("link", LINK, "k3"),
        listed("now_dir", DIR, "k4"),
        listed("new", FILE, "k5"),
        listed("fifo", "other", "k6"),
    ]
    known, wanted = _plan(listing, cache, limit=100)
    assert {i.name: i.ref for i in known} == {"same": sha(b"s"), "link": "same", "now_dir": ""}
    assert [e.name for e in wanted] == ["changed", "new"]
    with pytest.raises(PayloadTooLarge):
        _plan([listed("a", FILE, "k", size=60), listed("b", FILE, "k", size=60)], {}, limit=100)


def test_settling_leaves_a_margin_of_more_than_a_clock_tick() -> None:
    assert SETTLE_NS >= 10_000_000
