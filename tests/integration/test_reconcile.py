"""Start-up reconciliation on real Docker and PostgreSQL: nothing leaks either way."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.runtime.base import LABEL_SANDBOX, SandboxSpec
from sandlot.runtime.docker import DockerRuntime
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.reconcile import Reconciler
from sandlot.services.sandboxes import NewSandbox, SandboxService
from sandlot.settings import Settings
from sandlot.store.engine import make_engine, make_sessionmaker
from tests.conftest import BUSYBOX, INSTANCE


@pytest.fixture
async def sessions(pg_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = make_engine(pg_url)
    yield make_sessionmaker(engine)
    await engine.dispose()


@pytest.fixture
def service(
    sessions: async_sessionmaker[AsyncSession], docker_runtime: DockerRuntime, app_settings: Settings
) -> SandboxService:
    return SandboxService(sessions, docker_runtime, app_settings)


@pytest.fixture
async def principal(accounts: AccountService) -> Principal:
    tenant = await accounts.create_tenant(f"rec-{secrets.token_hex(4)}")
    key = await accounts.create_key(tenant.id)
    return await accounts.authenticate(f"Bearer {key.plaintext}")


async def test_unknown_containers_are_removed_and_lost_rows_go_offline(
    sessions: async_sessionmaker[AsyncSession],
    docker_runtime: DockerRuntime,
    principal: Principal,
    service: SandboxService,
) -> None:
    kept = await service.create(principal, NewSandbox(image=BUSYBOX))
    lost = await service.create(principal, NewSandbox(image=BUSYBOX))
    stray_id = f"sbx_{secrets.token_hex(8)}"
    stray = await docker_runtime.create(
        SandboxSpec(stray_id, principal.tenant_id, BUSYBOX, labels={LABEL_SANDBOX: stray_id})
    )
    assert lost.runtime_ref is not None
    await docker_runtime.docker.containers.container(lost.runtime_ref).delete(force=True)

    report = await Reconciler(sessions, docker_runtime, INSTANCE).run()

    assert stray in report.removed_containers
    assert lost.id in report.marked_offline
    assert kept.id not in report.marked_offline
    assert not await docker_runtime.is_running(stray)
    assert (await service.get(principal, lost.id)).status == "offline"
    assert (await service.get(principal, kept.id)).status == "ready"
    assert kept.runtime_ref is not None and await docker_runtime.is_running(kept.runtime_ref)
    owned = {o.labels.get(LABEL_SANDBOX) for o in await docker_runtime.list_owned(INSTANCE)}
    assert stray_id not in owned
    await service.delete(principal, kept.id)


async def test_a_stopped_container_of_a_ready_row_is_cleaned_up(
    sessions: async_sessionmaker[AsyncSession],
    docker_runtime: DockerRuntime,
    principal: Principal,
    service: SandboxService,
) -> None:
    row = await service.create(principal, NewSandbox(image=BUSYBOX))
    assert row.runtime_ref is not None
    await docker_runtime.docker.containers.container(row.runtime_ref).kill()
    report = await Reconciler(sessions, docker_runtime, INSTANCE).run()
    assert row.runtime_ref in report.removed_containers
    assert row.id in report.marked_offline
