"""The sweep at a run's start (tests/sweep.py) removes what a killed earlier run left: its
PostgreSQL server (stopped) and data directory, its tmpfs mount, its database, its container;
and leaves alone the same things of a run still going (this one) and those whose name is no
run's."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import aiodocker
import asyncpg
import pytest

from sandlot.runtime.base import LABEL_INSTANCE
from tests.conftest import BUSYBOX, PG_ADMIN_URL
from tests.faults.postgres import OwnPostgres
from tests.sweep import sweep_containers, sweep_databases, sweep_dirs, sweep_mounts


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.fixture
def runs() -> dict[str, str]:
    """Three run names: one of a killed run, one of this run (alive), one that is no run's."""
    dead, mine = _dead_pid(), os.getpid()
    return {
        "killed": f"test-{dead}-{secrets.token_hex(3)}",
        "alive": f"test-{mine}-{secrets.token_hex(3)}",
        "stranger": f"tost-{dead}-{secrets.token_hex(3)}",
    }


def _mounted(point: Path) -> bool:
    return any(line.split()[1] == str(point) for line in Path("/proc/self/mounts").read_text().splitlines())


@pytest.fixture
def mounts(tmp_path: Path, runs: dict[str, str]) -> Iterator[dict[str, Path]]:
    points = {kind: tmp_path / f"{name}-disk" for kind, name in runs.items()}
    for point in points.values():
        point.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], check=True)
    yield points
    for point in points.values():
        if _mounted(point):
            subprocess.run(["umount", "-l", str(point)], check=True)


def test_a_killed_runs_mount_is_unmounted_and_no_other(mounts: dict[str, Path]) -> None:
    gone = sweep_mounts()
    assert str(mounts["killed"]) in gone and not _mounted(mounts["killed"])
    assert _mounted(mounts["alive"]) and _mounted(mounts["stranger"])


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), 2).close()
    except OSError:
        return False
    return True


@pytest.mark.timeout(180)
def test_a_killed_runs_postgres_is_stopped_and_its_directory_removed(runs: dict[str, str]) -> None:
    servers = {kind: OwnPostgres(run=name) for kind, name in runs.items() if kind != "stranger"}
    stranger = Path(f"/tmp/{runs['stranger']}-pg-x")
    stranger.mkdir()
    try:
        servers["killed"].start()
        assert _answers(servers["killed"].port)
        removed = sweep_dirs()
        assert servers["killed"].root in removed and not servers["killed"].root.exists()
        assert not _answers(servers["killed"].port), "the killed run's server still answers"
        assert servers["alive"].root.exists() and stranger.exists()
    finally:
        for server in servers.values():
            server.destroy()
        stranger.rmdir()


async def test_a_killed_runs_databases_are_dropped_and_no_other(runs: dict[str, str]) -> None:
    names = {kind: f"sandlot_{name.replace('-', '_')}_{secrets.token_hex(2)}" for kind, name in runs.items()}
    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        for name in names.values():
            await conn.execute(f'CREATE DATABASE "{name}"')
        dropped = await sweep_databases(PG_ADMIN_URL)
        left = {r["datname"] for r in await conn.fetch("SELECT datname FROM pg_database")}
        assert names["killed"] in dropped and names["killed"] not in left
        assert names["alive"] in left and names["stranger"] in left
    finally:
        for name in names.values():
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await conn.close()


async def test_a_killed_runs_containers_are_removed_and_no_other(runs: dict[str, str]) -> None:
    docker = aiodocker.Docker()
    made = {}
    try:
        for kind, name in runs.items():
            config = {"Image": BUSYBOX, "Cmd": ["true"], "Labels": {LABEL_INSTANCE: f"{name}-rt"}}
            made[kind] = (await docker.containers.create(config)).id
        removed = await sweep_containers()
        assert made["killed"] in removed
        left = {c.id for c in await docker.containers.list(all=True)}
        assert made["killed"] not in left and {made["alive"], made["stranger"]} <= left
    finally:
        for cid in made.values():
            await asyncio.gather(docker.containers.container(cid).delete(force=True), return_exceptions=True)
        await docker.close()


def test_a_link_named_like_a_killed_run_is_not_followed(runs: dict[str, str], tmp_path: Path) -> None:
    """Anyone may plant a name in /tmp: a link named like a killed run's directory, leading to
    a directory with a postmaster.pid, is left alone, and so is what it leads to."""
    target = tmp_path / "someone-elses"
    (target / "data").mkdir(parents=True)
    (target / "data" / "postmaster.pid").write_text("1\n")
    link = Path(f"/tmp/{runs['killed']}-planted")
    link.symlink_to(target)
    try:
        assert link not in sweep_dirs()
        assert (target / "data" / "postmaster.pid").is_file()
    finally:
        link.unlink()
