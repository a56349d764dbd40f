"""Shared fixtures: a real PostgreSQL database built by the migrations, a real Docker engine,
and cleanup of every container the tests start (they all carry this run's instance label)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiodocker
import asyncpg
import pytest

from sandlot.runtime.base import LABEL_INSTANCE
from sandlot.runtime.docker import DockerRuntime
from sandlot.runtime.local import LocalRuntime
from sandlot.runtime.shells import ShellManager
from sandlot.store import migrate
from tests.flaky import pytest_terminal_summary  # noqa: F401  (a hook: the FLAKY lines)
from tests.sweep import sweep

#: Every container and local sandbox of this test run carries a label value starting with this.
INSTANCE = f"test-{os.getpid()}-{secrets.token_hex(3)}"
#: The runtime fixtures' own instance: the apps' periodic reconcilers never touch their sandboxes.
RUNTIME_INSTANCE = f"{INSTANCE}-rt"
BUSYBOX = "sandlot/busybox:latest"
PYTHON = "sandlot/python:3"
PG_ADMIN_URL = os.environ.get("SANDLOT_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")


def _db_url(admin: str, name: str) -> str:
    base, _, _ = admin.rpartition("/")
    return f"{base}/{name}"


async def create_pg_database() -> str:
    """Create an empty database for this run and return its URL."""
    name = f"sandlot_{INSTANCE.replace('-', '_')}_{secrets.token_hex(2)}"  # swept by its run's pid
    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return _db_url(PG_ADMIN_URL, name)


async def drop_pg_database(url: str) -> None:
    name = url.rpartition("/")[2]
    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def migrated_pg_database() -> AsyncIterator[str]:
    """A PostgreSQL database of its own at the migrations' head, dropped after."""
    url = await create_pg_database()
    try:
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
    finally:
        await drop_pg_database(url)


@pytest.fixture(scope="session")
async def pg_url() -> AsyncIterator[str]:
    """A PostgreSQL database for the whole run, at the migrations' head."""
    async with migrated_pg_database() as url:
        yield url


@pytest.fixture
async def own_pg_url() -> AsyncIterator[str]:
    """A PostgreSQL database of this test's own, at the migrations' head: a test that restarts
    the service, backdates rows or runs the background rounds touches nobody else's."""
    async with migrated_pg_database() as url:
        yield url


def _unit_only(request: pytest.FixtureRequest) -> bool:
    unit = Path(__file__).parent / "unit"
    return all(item.path.is_relative_to(unit) for item in request.session.items)


@pytest.fixture(scope="session", autouse=True)
async def _sweep_killed_runs(request: pytest.FixtureRequest) -> None:
    """At the start of the run, remove what a killed earlier run left (tests/sweep.py). A run
    of unit tests alone needs no Docker and no database, so it skips this."""
    if not _unit_only(request):
        await sweep(PG_ADMIN_URL)


@pytest.fixture(scope="session", autouse=True)
async def _remove_leftover_containers(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """At the end of the run, remove whatever this run's containers are left (their instance
    label starts with INSTANCE; apps started by the tests use INSTANCE-<suffix>). A run of unit
    tests alone needs no Docker, so it skips this."""
    yield
    if _unit_only(request):
        return
    docker = aiodocker.Docker()
    try:
        for c in await docker.containers.list(all=True, filters={"label": [LABEL_INSTANCE]}):
            if c._container.get("Labels", {}).get(LABEL_INSTANCE, "").startswith(INSTANCE):
                await c.delete(force=True, v=True)
    finally:
        await docker.close()


@pytest.fixture(scope="session")
async def docker_runtime() -> AsyncIterator[DockerRuntime]:
    runtime = DockerRuntime(instance=RUNTIME_INSTANCE)
    await runtime.ping()  # fails loudly: Docker tests never skip
    for image in (BUSYBOX, PYTHON):
        assert await runtime.image_exists(image), f"{image} missing: run scripts/test.sh"
    yield runtime
    await runtime.close()


@pytest.fixture(scope="session")
async def channel_runtime() -> AsyncIterator[DockerRuntime]:
    """Docker with its file reads and writes and its programs going through an idle shell
    opened on each sandbox (see runtime/channels.py): the same contract must hold."""
    rt = DockerRuntime(instance=RUNTIME_INSTANCE)
    rt.test_shells = ShellManager(rt)  # type: ignore[attr-defined]
    rt.use_channels(rt.test_shells.channel)  # type: ignore[attr-defined]
    yield rt
    await rt.test_shells.close_all()  # type: ignore[attr-defined]
    await rt.close()


@pytest.fixture(scope="session")
def local_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("local-sandboxes")
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
async def local_runtime(local_root: Path) -> AsyncIterator[LocalRuntime]:
    """The local runtime as a newcomer's start makes it: a relative data directory (resolved
    against the directory the service started in, which is not where commands run)."""
    with contextlib.chdir(local_root):
        runtime = LocalRuntime(Path(".sandlot/sandboxes"), instance=RUNTIME_INSTANCE)
    assert runtime.isolated, "bubblewrap is missing: run scripts/test.sh"
    yield runtime
    await runtime.close()
