"""The warm-pool claim on both stores: one statement on PostgreSQL, one transaction on SQLite.

Either way a claim moves the oldest ready sandbox straight into the session, records both
transitions, and inserts the session row, or writes nothing at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import col, select

from sandlot.domain.errors import Conflict
from sandlot.store import migrate
from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.repositories import PoolRepository
from sandlot.store.tables import Sandbox, SandboxEvent, Session, Tenant
from sandlot.store.types import utcnow
from tests.conftest import migrated_pg_database


@pytest.fixture(params=["postgresql", "sqlite"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'claim.db'}"
        await asyncio.to_thread(migrate.upgrade, url)
        yield url
        return
    async with migrated_pg_database() as url:
        yield url


def _box(tenant: str, name: str, age: int) -> Sandbox:
    return Sandbox(
        id=name,
        tenant_id=tenant,
        image="img",
        status="ready",
        runtime="docker",
        runtime_ref=f"ref-{name}",
        memory_mb=64,
        cpus=1.0,
        pids=64,
        environment_id="env_1",
        created_at=utcnow() - timedelta(seconds=age),
    )


def _session(tenant: str, sid: str) -> Session:
    return Session(
        id=sid, tenant_id=tenant, environment_id="env_1", image="img", status="active", state={"k": [1, 2]}
    )


async def test_claim_takes_oldest_ready_and_records_everything(db_url: str) -> None:
    engine = make_engine(db_url)
    sessions = make_sessionmaker(engine)
    try:
        async with sessions.begin() as s:
            s.add(Tenant(id="ten_1", name="t"))
        async with sessions.begin() as s:
            s.add_all([_box("ten_1", "sbx_new", 1), _box("ten_1", "sbx_old", 100)])

        first = _session("ten_1", "ses_1")
        async with sessions.begin() as s:
            got = await PoolRepository(s).claim_ready("env_1", "img", first, "session ses_1 started")
        assert got is not None and got.id == "sbx_old" and got.status == "in_session"
        assert got.runtime_ref == "ref-sbx_old" and first.sandbox_id == "sbx_old"

        async with sessions.begin() as s:
            await PoolRepository(s).claim_ready("env_1", "img", _session("ten_1", "ses_2"), "r")
            third = await PoolRepository(s).claim_ready("env_1", "img", _session("ten_1", "ses_3"), "r")
        assert third is None

        async with sessions() as s:
            stored = await s.get(Session, "ses_1")
            assert stored is not None and stored.sandbox_id == "sbx_old" and stored.state == {"k": [1, 2]}
            assert await s.get(Session, "ses_3") is None  # nothing written when nothing was ready
            box = await s.get(Sandbox, "sbx_old")
            assert box is not None and box.status == "in_session" and box.session_id == "ses_1"
            events = (
                await s.scalars(
                    select(SandboxEvent)
                    .where(col(SandboxEvent.sandbox_id) == "sbx_old")
                    .order_by(col(SandboxEvent.id))
                )
            ).all()
            assert [(e.from_status, e.to_status) for e in events] == [
                ("ready", "acquired"),
                ("acquired", "in_session"),
            ]
    finally:
        await engine.dispose()


async def test_claim_with_a_taken_session_id_is_a_conflict_and_claims_nothing(db_url: str) -> None:
    engine = make_engine(db_url)
    sessions = make_sessionmaker(engine)
    try:
        async with sessions.begin() as s:
            s.add(Tenant(id="ten_1", name="t"))
        async with sessions.begin() as s:
            s.add_all([_box("ten_1", "sbx_a", 2), _box("ten_1", "sbx_b", 1)])
        async with sessions.begin() as s:
            assert await PoolRepository(s).claim_ready("env_1", "img", _session("ten_1", "dup"), "r")
        with pytest.raises(Conflict):
            async with sessions.begin() as s:
                await PoolRepository(s).claim_ready("env_1", "img", _session("ten_1", "dup"), "r")
        async with sessions() as s:
            box = await s.get(Sandbox, "sbx_b")
            assert box is not None and box.status == "ready"  # rolled back with the insert
    finally:
        await engine.dispose()


async def test_claim_within_quota_claims_only_below_the_session_quota(db_url: str) -> None:
    engine = make_engine(db_url)
    sessions = make_sessionmaker(engine)
    try:
        async with sessions.begin() as s:
            s.add(Tenant(id="ten_1", name="t", max_sessions=1))
        async with sessions.begin() as s:
            s.add_all([_box("ten_1", "sbx_a", 2), _box("ten_1", "sbx_b", 1)])
        async with sessions.begin() as s:
            got, counted = await PoolRepository(s).claim_within_quota(
                "env_1", "img", _session("ten_1", "s1"), "r"
            )
        assert got is not None and got.id == "sbx_a" and counted == (1, 0)
        async with sessions.begin() as s:
            refused, counted = await PoolRepository(s).claim_within_quota(
                "env_1", "img", _session("ten_1", "s2"), "r"
            )
        assert refused is None and counted == (1, 1)
        async with sessions() as s:
            assert await s.get(Session, "s2") is None  # nothing written past the quota
            box = await s.get(Sandbox, "sbx_b")
            assert box is not None and box.status == "ready"
    finally:
        await engine.dispose()
