"""The app on real PostgreSQL and real Docker, and tenants with their own keys."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from sandlot.store.engine import make_engine, make_sessionmaker
from tests.conftest import INSTANCE
from tests.integration.servers import Server

Headers = dict[str, str]


@pytest.fixture(scope="session")
def app_settings(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        database_url=pg_url,
        runtime="docker",
        instance=INSTANCE,
        data_dir=tmp_path_factory.mktemp("data"),
        reaper_interval=0.5,
        pool_interval=0.3,
        pool_check_interval=1.0,  # a broken idle sandbox is found within a test's patience
        max_file_bytes=16 << 20,
        max_request_bytes=64 << 10,
        exec_output_limit=8 << 20,
        bootstrap_operator_key=False,
        database_pool_size=5,  # every process of the run shares one PostgreSQL's 100 connections
        database_max_overflow=30,
    )


@pytest.fixture(scope="session")
async def client(app_settings: Settings) -> AsyncIterator[AsyncTestClient]:
    app = create_app(app_settings)
    async with AsyncTestClient(app, timeout=120) as c:
        yield c


@pytest.fixture(scope="session")
def live_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``sandlot serve`` (granian) on the test database, beside the in-process app: a
    second API process of the same deployment. Yields its base URL (http://127.0.0.1:PORT)."""
    data_dir = tmp_path_factory.mktemp("live")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": INSTANCE,
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_RECONCILE_ON_START": "false",  # the in-process app is creating containers too
        "SANDLOT_PROCESS_OUTPUT_LIMIT": str(1 << 20),
        "SANDLOT_POOL_INTERVAL": "0.3",
        "SANDLOT_DATABASE_POOL_SIZE": "5",
    }
    with Server(settings, data_dir / "server.log") as server:
        yield server.url


@pytest.fixture(scope="session")
async def accounts(pg_url: str) -> AsyncIterator[AccountService]:
    engine = make_engine(pg_url)
    yield AccountService(make_sessionmaker(engine))
    await engine.dispose()


NewTenant = Callable[..., Awaitable[Headers]]


def key_of(headers: Headers) -> str:
    """The API key in headers from ``new_tenant`` or ``operator``, for the client libraries."""
    return headers["Authorization"].removeprefix("Bearer ")


@pytest.fixture
def new_tenant(accounts: AccountService) -> NewTenant:
    """Make a tenant with a fresh key; returns the request headers for that key."""

    async def make(scopes: list[str] | None = None, **quota: object) -> Headers:
        tenant = await accounts.create_tenant(f"t-{secrets.token_hex(4)}", **quota)  # type: ignore[arg-type]
        key = await accounts.create_key(tenant.id, scopes=scopes)
        return {"Authorization": f"Bearer {key.plaintext}"}

    return make


@pytest.fixture
async def operator(accounts: AccountService) -> Headers:
    key = await accounts.create_key(
        (await accounts.create_tenant(f"ops-{secrets.token_hex(4)}")).id, operator=True
    )
    return {"Authorization": f"Bearer {key.plaintext}"}


@pytest.fixture
def data_dir(app_settings: Settings) -> Path:
    return app_settings.data_dir


class Api:
    """Small helpers over the test client for one tenant's key."""

    def __init__(self, client: AsyncTestClient, headers: Headers) -> None:
        self.client = client
        self.h = headers

    async def env(self, **fields: object) -> dict:
        body = {"name": f"env-{secrets.token_hex(3)}", "images": ["sandlot/busybox:latest"], **fields}
        resp = await self.client.post("/v1/environments", json=body, headers=self.h)
        assert resp.status_code == 201, resp.text
        return resp.json()

    async def session(self, environment: str, **fields: object) -> dict:
        resp = await self.client.post(
            "/v1/sessions", json={"environment": environment, **fields}, headers=self.h
        )
        assert resp.status_code == 201, resp.text
        return resp.json()

    async def call(self, session_id: str, feature: str, activity: str, **args: object):
        return await self.client.post(
            f"/v1/sessions/{session_id}/features/{feature}/{activity}", json=args, headers=self.h
        )

    async def sh(self, session_id: str, command: str, **args: object) -> dict:
        resp = await self.call(session_id, "shell", "run", command=command, **args)
        assert resp.status_code == 200, resp.text
        return resp.json()

    async def end(self, session_id: str) -> None:
        resp = await self.client.delete(f"/v1/sessions/{session_id}", headers=self.h)
        assert resp.status_code == 204, resp.text


@pytest.fixture
async def api(client: AsyncTestClient, new_tenant: NewTenant) -> Api:
    return Api(client, await new_tenant())
