"""What a killed earlier test run left on the machine, found by its name and removed when a run
starts.

Everything a run makes outside its pytest temporary directory carries the run's name,
``test-<pid>-<6 hex>`` (``tests.conftest.INSTANCE``; ``sandlot_test_<pid>_<hex>`` for a
database, whose name takes no dashes): its containers' instance label, its databases, the
tmpfs it mounts, the directories of the PostgreSQL servers it starts. A name whose pid no
longer runs is a leftover: its PostgreSQL server is stopped (by its own ``pg_ctl``), its mounts
unmounted (lazily), its directories, databases and containers removed. A name whose pid runs
(this run, or another run beside it) and a name that is not a run's are left alone; so are
links and directories of other users (anyone may plant a name in /tmp), and mounts outside
/tmp. A run is told alive by its pid in this machine's pid namespace: runs that share the
Docker engine or the database from another machine or container are not told apart.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import stat
import subprocess
from collections.abc import Iterable
from pathlib import Path

import aiodocker
import asyncpg

from sandlot.runtime.base import LABEL_INSTANCE

__all__ = ["DIRS", "leftover", "sweep", "sweep_databases", "sweep_dirs", "sweep_mounts"]

_RUN = re.compile(r"(?:^|/)(?:test-|sandlot_test_)(\d+)[-_][0-9a-f]{6}(?:$|[-_])")
#: Where a run makes directories of its own (named with its run name).
DIRS = (Path("/tmp"),)
_OWNERS = {os.getuid(), *(u.pw_uid for u in pwd.getpwall() if u.pw_name == "postgres")}


def leftover(name: str) -> bool:
    """True when ``name`` is a run's and that run's process is gone."""
    found = _RUN.search(name)
    if found is None:
        return False
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):
        return False
    return False


def sweep_mounts(mounts: Path = Path("/proc/self/mounts"), roots: Iterable[Path] = DIRS) -> list[str]:
    """Unmount (lazily) every mount under ``roots`` whose mount point is a leftover's; deepest
    first."""
    points = [line.split()[1] for line in mounts.read_text().splitlines() if len(line.split()) > 1]
    under = [p for p in points if any(Path(p).is_relative_to(root) for root in roots)]
    gone = sorted((p for p in under if leftover(p)), key=len, reverse=True)
    for point in gone:
        subprocess.run(["umount", "-l", point], capture_output=True, check=False, timeout=30)
    return gone


def sweep_dirs(roots: Iterable[Path] = DIRS) -> list[Path]:
    """Remove every leftover's directory directly under ``roots``, stopping the PostgreSQL
    server one holds first."""
    removed: list[Path] = []
    for root in roots:
        for path in sorted(root.glob("test-*")):
            if not (_own_directory(path) and leftover(path.name)):
                continue
            for data in path.iterdir():
                if _own_directory(data) and (data / "postmaster.pid").is_file():
                    _stop_postgres(data)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _own_directory(path: Path) -> bool:
    """A directory (not a link to one: anyone may plant a link in /tmp) that this user, or the
    postgres user a run gives its servers' directories to, owns."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid in _OWNERS


def _stop_postgres(data: Path) -> None:
    pg_ctl = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if pg_ctl:
        stop = [str(pg_ctl[-1]), "-D", str(data), "-m", "immediate", "stop"]
        subprocess.run(["runuser", "-u", "postgres", "--", *stop], capture_output=True, timeout=60)


async def sweep_databases(admin_url: str) -> list[str]:
    """Drop every leftover's database on the server of ``admin_url``."""
    conn = await asyncpg.connect(admin_url)
    try:
        rows = await conn.fetch("SELECT datname FROM pg_database WHERE datname LIKE 'sandlot_test_%'")
        names = [r["datname"] for r in rows if leftover(r["datname"])]
        for name in names:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()
    return names


async def sweep_containers() -> list[str]:
    """Remove every container and network whose instance label is a leftover's."""
    removed: list[str] = []
    docker = aiodocker.Docker()
    try:
        for c in await docker.containers.list(all=True, filters={"label": [LABEL_INSTANCE]}):
            if leftover(c._container.get("Labels", {}).get(LABEL_INSTANCE, "")):
                with contextlib.suppress(aiodocker.DockerError):
                    await c.delete(force=True, v=True)
                    removed.append(c.id)
        for network in await docker.networks.list(filters={"label": [LABEL_INSTANCE]}):
            if leftover(network.get("Labels", {}).get(LABEL_INSTANCE, "")):
                with contextlib.suppress(aiodocker.DockerError):
                    await (await docker.networks.get(network["Id"])).delete()
                    removed.append(network["Id"])
    finally:
        await docker.close()
    return removed


async def sweep(admin_url: str) -> None:
    """Everything above, mounts before the directories that hold them."""
    sweep_mounts()
    sweep_dirs()
    await sweep_databases(admin_url)
    await sweep_containers()
