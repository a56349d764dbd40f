"""Queries on a hot path stay proportional to what is live, not to history: an environment
that has had many sandboxes (every one ever shut down stays as an ``offline`` row, with its
events) must not make each housekeeping round or pool-full start read them all."""

from __future__ import annotations

import pytest
from sqlalchemy import event, text

from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.repositories import PoolRepository

pytestmark = pytest.mark.postgres

_SANDBOXES = """
INSERT INTO sandboxes (id, tenant_id, image, status, status_reason, runtime, workspace, memory_mb,
  cpus, pids, network, env, created_at, updated_at, environment_id, reusable)
SELECT 'sbx_' || :status || g, 'ten_scale', 'img', :status, '', 'docker', '/workspace', 512, 1,
  256, false, '{}', now(), now(), 'env_scale', true
FROM generate_series(1, :n) g
"""


async def test_an_environments_pool_counts_read_only_its_live_sandboxes(own_pg_url: str) -> None:
    engine = make_engine(own_pg_url)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO tenants (id, name, max_sandboxes, max_memory_mb, max_cpus, allow_network,"
                    " created_at, max_sessions, max_disk_mb, max_snapshot_mb)"
                    " VALUES ('ten_scale', 'scale', 10, 10, 10, false, now(), 10, 10, 10)"
                )
            )
            for status, n in (("offline", 30_000), ("ready", 3), ("in_session", 2)):
                await conn.execute(text(_SANDBOXES), {"status": status, "n": n})
            await conn.execute(text("ANALYZE sandboxes"))
        seen: list[tuple[str, object]] = []

        def keep(conn: object, cursor: object, sql: str, params: object, *rest: object) -> None:
            seen.append((sql, params))

        event.listen(engine.sync_engine, "before_cursor_execute", keep)
        async with make_sessionmaker(engine)() as session:
            counts = await PoolRepository(session).counts("env_scale")
        event.remove(engine.sync_engine, "before_cursor_execute", keep)
        assert counts == {("img", "ready"): 3, ("img", "in_session"): 2}
        (sql, params), *_ = [(q, p) for q, p in seen if "count(" in q.lower()]
        async with engine.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            args = list(params) if isinstance(params, tuple | list) else []
            plan = "\n".join(r[0] for r in await driver.fetch(f"EXPLAIN {sql}", *args))
        assert "Seq Scan on sandboxes" not in plan, plan
    finally:
        await engine.dispose()
