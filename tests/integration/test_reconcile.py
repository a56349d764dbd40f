"""Reconciliation on real Docker and PostgreSQL: nothing leaks either way, and nothing stays
in a transitional status. The sandboxes here carry their own instance, so the test app's own
periodic reconciler never competes for them."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.runtime.base import LABEL_SANDBOX, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.reconcile import Reconciler
from sandlot.services.sandboxes import NewSandbox, SandboxService
from sandlot.settings import Settings
from sandlot.store.engine import make_engine, make_sessionmaker
from sandlot.store.repositories import SandboxRepository
from sandlot.store.tables import Sandbox
from sandlot.store.types import utcnow
from tests.conftest import BUSYBOX, INSTANCE

MINE = f"{INSTANCE}-rc"


@pytest.fixture
async def sessions(pg_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(pg_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture(scope="module")
async def runtime() -> AsyncIterator[DockerRuntime]:
    rt = DockerRuntime(instance=MINE)
    yield rt
    for found in await rt.list_owned(MINE):
        await rt.remove(found.ref)
    await rt.close()


@pytest.fixture
def service(
    sessions: async_sessionmaker[AsyncSession], runtime: DockerRuntime, app_settings: Settings
) -> SandboxService:
    return SandboxService(sessions, runtime, app_settings.model_copy(update={"instance": MINE}))


@pytest.fixture
def reconciler(
    sessions: async_sessionmaker[AsyncSession], runtime: DockerRuntime, service: SandboxService
) -> Reconciler:
    return Reconciler(
        sessions,
        runtime,
        MINE,
        shutdown=service.shutdown,
        stuck_after={"setting_up": timedelta(seconds=1), "shutting_down": timedelta(seconds=1)},
    )


@pytest.fixture
async def principal(accounts: AccountService) -> Principal:
    tenant = await accounts.create_tenant(f"rec-{secrets.token_hex(4)}")
    key = await accounts.create_key(tenant.id)
    return await accounts.authenticate(f"Bearer {key.plaintext}")


async def test_unknown_containers_are_removed_and_lost_rows_go_offline(
    runtime: DockerRuntime, principal: Principal, service: SandboxService, reconciler: Reconciler
) -> None:
    kept = await service.create(principal, NewSandbox(image=BUSYBOX))
    lost = await service.create(principal, NewSandbox(image=BUSYBOX))
    stray_id = f"sbx_{secrets.token_hex(8)}"
    stray = await runtime.create(
        SandboxSpec(stray_id, principal.tenant_id, BUSYBOX, labels={LABEL_SANDBOX: stray_id})
    )
    assert lost.runtime_ref is not None
    await runtime.docker.containers.container(lost.runtime_ref).delete(force=True)

    report = await reconciler.run()

    assert stray in report.removed_containers
    assert lost.id in report.marked_offline
    assert kept.id not in report.marked_offline
    assert not await runtime.is_running(stray)
    assert (await service.get(principal, lost.id)).status == "offline"
    assert (await service.get(principal, kept.id)).status == "ready"
    assert kept.runtime_ref is not None and await runtime.is_running(kept.runtime_ref)
    owned = {o.labels.get(LABEL_SANDBOX) for o in await runtime.list_owned(MINE)}
    assert stray_id not in owned
    await service.delete(principal, kept.id)


async def test_a_stopped_container_of_a_ready_row_is_cleaned_up(
    runtime: DockerRuntime, principal: Principal, service: SandboxService, reconciler: Reconciler
) -> None:
    # what an engine restart does to every container
    row = await service.create(principal, NewSandbox(image=BUSYBOX))
    assert row.runtime_ref is not None
    await runtime.docker.containers.container(row.runtime_ref).kill()
    report = await reconciler.run()
    assert row.runtime_ref in report.removed_containers
    assert row.id in report.marked_offline


async def _row_as_a_crash_left_it(
    sessions: async_sessionmaker[AsyncSession], principal: Principal, status: str, runtime: DockerRuntime
) -> tuple[Sandbox, str]:
    """A row in ``status`` last touched ten minutes ago, and its running container."""
    row = Sandbox(
        tenant_id=principal.tenant_id,
        image=BUSYBOX,
        status=status,
        runtime="docker",
        instance=MINE,
        memory_mb=64,
        cpus=0.5,
        pids=64,
        updated_at=utcnow() - timedelta(minutes=10),
    )
    async with sessions.begin() as session:
        session.add(row)
    ref = await runtime.create(
        SandboxSpec(row.id, principal.tenant_id, BUSYBOX, labels={LABEL_SANDBOX: row.id})
    )
    return row, ref


@pytest.mark.parametrize("status", ["setting_up", "shutting_down"])
async def test_a_sandbox_stuck_in_a_transitional_status_is_finished(
    sessions: async_sessionmaker[AsyncSession],
    runtime: DockerRuntime,
    principal: Principal,
    reconciler: Reconciler,
    status: str,
) -> None:
    # the report: after an engine restart sandboxes stayed shutting_down for 9 minutes; a
    # SIGKILLed create left setting_up with a running container
    row, ref = await _row_as_a_crash_left_it(sessions, principal, status, runtime)
    report = await reconciler.run()
    assert row.id in report.marked_offline + report.finished_stuck
    assert not await runtime.is_running(ref)
    async with sessions() as session:
        assert (await SandboxRepository(session, None).get(row.id)).status == "offline"


async def test_a_young_pending_sandbox_is_left_to_the_process_creating_it(
    sessions: async_sessionmaker[AsyncSession],
    runtime: DockerRuntime,
    principal: Principal,
    reconciler: Reconciler,
) -> None:
    row, ref = await _row_as_a_crash_left_it(sessions, principal, "setting_up", runtime)
    async with sessions.begin() as session:
        fresh = await SandboxRepository(session, None).get(row.id, lock=True)
        fresh.updated_at = utcnow()
    report = await reconciler.run()
    assert row.id not in report.marked_offline + report.finished_stuck
    assert await runtime.is_running(ref)
    await runtime.remove(ref)
