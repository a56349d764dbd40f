"""Reconciliation on real Docker and PostgreSQL: nothing leaks either way, and nothing stays
in a transitional status. The sandboxes here carry their own instance, so the test app's own
periodic reconciler never competes for them."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.status import SandboxStatus
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


async def test_a_shutdown_whose_container_is_gone_is_finished_with_its_own_reason(
    sessions: async_sessionmaker[AsyncSession],
    runtime: DockerRuntime,
    principal: Principal,
    service: SandboxService,
    reconciler: Reconciler,
) -> None:
    """A shutdown removes the container before its row goes offline: whether another process
    is finishing it right now or an engine outage cut it short, the next round finishes it at
    once (not only once it is stuck) and records the reason the shutdown started with."""
    row, ref = await _row_as_a_crash_left_it(sessions, principal, "shutting_down", runtime)
    await runtime.remove(ref)
    async with sessions.begin() as session:
        young = await SandboxRepository(session, None).get(row.id, lock=True)
        young.updated_at, young.status_reason = utcnow(), "ttl expired"
    report = await reconciler.run()
    assert row.id in report.marked_offline
    await service.shutdown(row.id, "ttl expired")  # the process that started it: already done
    events = await service.events(principal, row.id)
    assert (events[-1].to_status, events[-1].reason) == ("offline", "ttl expired")
    assert [e.to_status for e in events].count("offline") == 1


async def test_a_round_acts_only_on_the_status_it_read(
    sessions: async_sessionmaker[AsyncSession],
    runtime: DockerRuntime,
    principal: Principal,
    service: SandboxService,
) -> None:
    """A reaper elsewhere starts its shutdown (and removes the container) after the round read
    the row: the round's phantom call finds the row moved on and leaves it, so the sandbox goes
    offline with the reaper's reason."""
    row = await service.create(principal, NewSandbox(image=BUSYBOX))
    assert row.runtime_ref is not None

    async def reaper_first(sandbox_id: str, reason: str, *, only_if: SandboxStatus | None = None) -> bool:
        async with sessions.begin() as session:  # the reaper's first step, just before ours
            repo = SandboxRepository(session, None)
            await repo.move(await repo.get(sandbox_id, lock=True), SandboxStatus.SHUTTING_DOWN, "ttl expired")
        return await service.shutdown(sandbox_id, reason, only_if=only_if)

    await runtime.remove(row.runtime_ref)
    report = await Reconciler(sessions, runtime, MINE, shutdown=reaper_first).run()
    assert row.id not in report.marked_offline
    await service.shutdown(row.id, "ttl expired")  # the reaper's last steps
    events = await service.events(principal, row.id)
    assert (events[-1].to_status, events[-1].reason) == ("offline", "ttl expired")
