"""The abuse suite's fixtures: the integration suite's app and tenants, tenant B's latency
meter, and the figures it collects (written to ``artifacts/abuse.json`` at the end)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient

from tests.abuse.neighbour import Neighbour
from tests.integration.conftest import (  # noqa: F401 (fixtures shared with the integration suite)
    accounts,
    app_settings,
    client,
    live_server,
    new_tenant,
)

ARTIFACT = Path(__file__).resolve().parents[2] / "artifacts" / "abuse.json"


@pytest.fixture(scope="session")
def figures() -> Iterator[dict[str, Any]]:
    """Noisy-neighbour figures by abuse; printed and written as JSON when the run ends."""
    found: dict[str, Any] = {}
    yield found
    if found:
        ARTIFACT.parent.mkdir(exist_ok=True)
        ARTIFACT.write_text(json.dumps(found, indent=2) + "\n")
        print(f"\nnoisy neighbour figures in {ARTIFACT}")


@pytest.fixture
async def neighbour(client: AsyncTestClient, new_tenant: Any) -> AsyncIterator[Neighbour]:  # noqa: F811
    """Tenant B: its own environment and session, ready to time shell commands."""
    found = Neighbour(client, await new_tenant())
    await found.start()
    try:
        yield found
    finally:
        await found.stop()
