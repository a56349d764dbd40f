"""Helpers of the snapshot tests: the workspace's exact state, checkpoints, the tenant's
content blobs, and the app's store and runtime opened again in the tests' own event loop."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass

import asyncpg
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from sandlot.runtime.docker import DockerRuntime
from sandlot.services.capture import WorkspaceCapture
from sandlot.services.snapshot_gc import SnapshotCollector
from sandlot.services.snapshots import SnapshotService
from sandlot.services.transfers import Transfers
from sandlot.settings import Settings
from sandlot.store.blobs import FileBlobStore
from sandlot.store.engine import make_engine, make_sessionmaker
from tests.integration.conftest import Api

#: Every entry of the workspace (kind, mode, a file's size, mtime and hash, a link's target),
#: NUL-separated and sorted: names with newlines or bytes that are not UTF-8 compare exactly.
STATE = (
    "(cd /workspace && find . -mindepth 1 -print0 | sort -z | xargs -0 -r stat -c '%n|%F|%a|%N' && "
    "find . -type f -print0 | sort -z | xargs -0 -r stat -c '%n|%s|%Y' && "
    "find . -type f -print0 | sort -z | xargs -0 -r sha256sum)"
)


@dataclass
class Own:
    """The app's store and runtime, opened again in the tests' own event loop (the app runs
    in another): its database, its snapshot service, and a collector with no grace period."""

    engine: AsyncEngine
    snapshots: SnapshotService
    collector: SnapshotCollector

    @property
    def capture(self) -> WorkspaceCapture:
        return self.snapshots.capture


@pytest.fixture
async def own(app_settings: Settings) -> AsyncIterator[Own]:
    engine = make_engine(app_settings.database_url)
    runtime = DockerRuntime(instance=app_settings.instance)
    blobs = FileBlobStore(app_settings.data_dir / "blobs")
    sessions = make_sessionmaker(engine)
    snapshots = SnapshotService(sessions, blobs, runtime, app_settings, Transfers(runtime, app_settings))
    try:
        yield Own(engine, snapshots, SnapshotCollector(sessions, blobs, grace_seconds=0))
    finally:
        await runtime.close()
        await engine.dispose()


def stdout_of(result: dict) -> bytes:
    if result.get("encoding") == "base64":
        return base64.b64decode(result["stdout"])
    return str(result["stdout"]).encode()


async def state(api: Api, session_id: str) -> bytes:
    result = await api.sh(session_id, STATE)
    assert result["exit_code"] == 0, result
    return stdout_of(result)


async def tenant_id(api: Api) -> str:
    return str((await api.client.get("/v1/tenants/", headers=api.h)).json()[0]["id"])


async def blob_rows(pg_url: str, tenant: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(pg_url)
    try:
        return await conn.fetch(
            "SELECT digest, size_bytes, blob_key FROM content_blobs WHERE tenant_id = $1", tenant
        )
    finally:
        await conn.close()


async def checkpoint(api: Api, session_id: str) -> dict:
    resp = await api.client.post(f"/v1/sessions/{session_id}/checkpoints", headers=api.h)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())
