"""Migrations: one head; upgrade -> downgrade -> upgrade on PostgreSQL and SQLite; the
migrated schema matches the models."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect
from sqlmodel import SQLModel

import sandlot.store.tables  # noqa: F401
from sandlot.store import migrate
from sandlot.store.engine import make_engine
from tests.conftest import create_pg_database, drop_pg_database

TABLES = {
    "tenants",
    "api_keys",
    "sandboxes",
    "sandbox_events",
    "environments",
    "sessions",
    "activities",
    "processes",
    "snapshots",
    "content_blobs",
    "snapshot_blobs",
    "assets",
    "audit_events",
    "rate_buckets",
    "issued_tokens",
}


@pytest.fixture(params=["postgresql", "sqlite"])
async def empty_db(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
        return
    url = await create_pg_database()
    yield url
    await drop_pg_database(url)


async def _tables_and_diff(url: str) -> tuple[set[str], list[object]]:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:

            def look(sync_conn):  # type: ignore[no-untyped-def]
                tables = set(inspect(sync_conn).get_table_names()) - {"alembic_version"}
                ctx = MigrationContext.configure(sync_conn, opts={"compare_type": True})
                return tables, compare_metadata(ctx, SQLModel.metadata)

            return await conn.run_sync(look)
    finally:
        await engine.dispose()


def test_there_is_exactly_one_head() -> None:
    assert len(migrate.heads()) == 1


async def test_upgrade_downgrade_upgrade(empty_db: str) -> None:
    await asyncio.to_thread(migrate.upgrade, empty_db)
    tables, diff = await _tables_and_diff(empty_db)
    assert tables == TABLES
    assert diff == [], f"models and migrations disagree: {diff}"
    await asyncio.to_thread(migrate.downgrade, empty_db, "base")
    tables, _ = await _tables_and_diff(empty_db)
    assert tables == set()
    await asyncio.to_thread(migrate.upgrade, empty_db)
    tables, diff = await _tables_and_diff(empty_db)
    assert tables == TABLES and diff == []
