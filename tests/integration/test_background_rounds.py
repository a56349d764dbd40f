"""The background rounds that one API process leads at a time (pools, reconcile, snapshot
collection) hold their lock on a connection of their own: with a request pool of one
connection they run beside the requests, and never wait for a connection while holding one.
(Leading on a connection of the requests' pool, three rounds of a pool of three each held one
and waited for a second: every request and every round waited the pool's 30 s timeout, and the
rounds failed.)"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings
from tests.conftest import INSTANCE

pytestmark = pytest.mark.timeout(90)


async def test_rounds_that_lead_take_no_connection_of_the_requests(
    own_pg_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(
        database_url=own_pg_url,  # its own: the rounds see no other test's environments
        runtime="docker",
        instance=f"{INSTANCE}-rounds",
        data_dir=tmp_path,
        bootstrap_operator_key=False,
        reconcile_on_start=False,
        database_pool_size=1,
        database_max_overflow=0,
        reaper_interval=0.05,
        pool_interval=0.05,
        reconcile_interval=0.05,
        snapshot_gc_interval=0.05,
    )
    caplog.set_level(logging.ERROR, logger="sandlot")
    async with AsyncTestClient(create_app(settings), timeout=60) as client:
        for _ in range(40):  # some 2 s of requests, each beside rounds of every loop
            resp = await client.get("/readyz")
            assert resp.status_code == 200, resp.text
            await asyncio.sleep(0.05)
    failed = [r.getMessage() for r in caplog.records if "failed a round" in r.getMessage()]
    assert not failed, failed
