"""Pure pieces that stand between a hostile tenant and the service: patterns, paths, the
stream bridge, program output parsing."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import pytest

from sandlot.domain.errors import InvalidInput
from sandlot.domain.paths import resolve_cwd
from sandlot.domain.patterns import MAX_PATTERN, compile_pattern
from sandlot.domain.pools import NO_POOL, PoolBounds, bounds_for, parse_pool_size
from sandlot.features.base import Feature
from sandlot.features.python import _split_value
from sandlot.runtime.bridge import consume, produce, transform
from sandlot.runtime.file_scripts import octal
from sandlot.settings import Settings

# catastrophic for a backtracking engine: 3^22 paths for a 22-character image name
EVIL = r"(\S|\S|\S)*Z"


def test_a_pathological_pool_pattern_matches_in_linear_time() -> None:
    # the report: (\S|\S)*Z froze /healthz for ~1.8 s per session start; a worse one hangs.
    # With a backtracking engine this call would not return within the test's timeout.
    rules = {EVIL: [1, 2], ".*": [0, 3]}
    assert bounds_for(rules, "sandlot/busybox:latest") == PoolBounds(0, 3)
    assert compile_pattern(EVIL, "pool_size").fullmatch("a" * 100_000) is False


def test_a_pathological_feature_pattern_matches_in_linear_time() -> None:
    feature = Feature(applicable_images=EVIL)
    assert not feature.applies_to("x" * 300)


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)b", "x" * (MAX_PATTERN + 1), "a\x00"])
def test_patterns_an_re2_engine_cannot_run_are_refused(pattern: str) -> None:
    with pytest.raises(InvalidInput):
        parse_pool_size({pattern: [0, 1]})
    with pytest.raises(InvalidInput):
        Feature(applicable_images=pattern)


def test_no_pool_for_an_image_no_rule_matches() -> None:
    assert bounds_for({"sandlot/python.*": [1, 2]}, "sandlot/busybox:latest") == NO_POOL


def test_a_relative_data_dir_is_made_absolute_when_settings_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings(data_dir=Path(".sandlot"))
    assert settings.data_dir == tmp_path / ".sandlot"
    assert settings.database_url == f"sqlite+aiosqlite:///{tmp_path / '.sandlot' / 'sandlot.db'}"


def test_a_relative_cwd_is_taken_from_the_workspace() -> None:
    assert resolve_cwd("/workspace", "sub/dir") == "/workspace/sub/dir"
    assert resolve_cwd("/workspace", "/tmp") == "/tmp"
    assert resolve_cwd("/workspace", None) is None
    with pytest.raises(InvalidInput):
        resolve_cwd("/workspace", "a\x00b")


@pytest.mark.parametrize(
    ("stdout", "want"),
    [
        (b'hi\n\n__M__"42"\n', (b"hi\n", "42")),
        (b'hi\n__M__{"not": "a string"}\n', (b'hi\n__M__{"not": "a string"}\n', None)),
        (b'\n__M__"cut', (b'\n__M__"cut', None)),
        (b'\n__M__"1"\nprinted after\n', (b'\n__M__"1"\nprinted after\n', None)),
        (b"\n__M__\xff\n", (b"\n__M__\xff\n", None)),
        (b"no marker", (b"no marker", None)),
    ],
)
def test_python_output_that_is_not_the_drivers_json_is_kept_as_output(
    stdout: bytes, want: tuple[bytes, str | None]
) -> None:
    # the report: python.run whose output was not valid JSON was a 500
    assert _split_value(stdout, "__M__") == want


def test_octal_escapes_carry_every_byte() -> None:
    assert octal("a\n\udcff") == "\\0141\\0012\\0377"


async def _source(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def test_the_bridge_carries_streams_both_ways() -> None:
    def upper(reader: IO[bytes], writer: IO[bytes]) -> None:
        while chunk := reader.read(3):
            writer.write(chunk.upper())

    out = [c async for c in transform(_source(b"abc", b"def", b"g"), upper)]
    assert b"".join(out) == b"ABCDEFG"
    assert await consume(_source(b"12", b"34"), lambda r: r.read()) == b"1234"
    assert b"".join([c async for c in produce(lambda w: w.write(b"x" * 200_000))]) == b"x" * 200_000


async def test_a_failing_source_fails_the_work_and_an_early_stop_ends_it() -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"part"
        raise ConnectionResetError("gone")

    with pytest.raises(ConnectionResetError):
        await consume(broken(), lambda r: r.read())

    stopped = asyncio.Event()
    loop = asyncio.get_running_loop()

    def endless(writer: IO[bytes]) -> None:
        try:
            while True:
                writer.write(b"x" * 65536)
                writer.flush()
        finally:
            loop.call_soon_threadsafe(stopped.set)

    stream = produce(endless)
    assert await anext(stream)
    await stream.aclose()  # the consumer leaves: the thread's next write fails
    await asyncio.wait_for(stopped.wait(), timeout=10)


async def test_bytes_io_is_fine_for_the_bridge() -> None:
    assert await consume(_source(b"data"), lambda r: io.BytesIO(r.read()).getvalue()) == b"data"


def test_only_ipv4_addresses_of_the_hosts_listing_reach_the_network_guard() -> None:
    """What `ip -4 -o addr show` printed is passed to a shell as arguments: only addresses
    parse through, loopback is left out."""
    from sandlot.runtime.docker_guard import parse_addresses

    listing = "\n".join(
        [
            "1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever",
            "2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0",
            "3: docker0    inet 172.17.0.1/16 brd 172.17.255.255 scope global docker0",
            "4: evil    inet $(reboot)/24 scope global evil",
            "5: evil2    inet 10.0.0.1;rm/8 scope global",
            "6: short    inet",
            "garbage",
            "7: v6    inet6 fe80::1/64 scope link",
        ]
    )
    assert parse_addresses(listing) == {"192.0.2.2", "172.17.0.1"}
