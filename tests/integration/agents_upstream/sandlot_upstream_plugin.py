"""A pytest plugin for a run of the OpenAI Agents SDK's own test suite (its sdist's ``tests/``,
a package also named ``tests``, hence a subprocess: see ``test_openai_agents_upstream.py``).

The SDK's tests of its local sandbox build their sessions with ``UnixLocalSandboxClient``,
looked up in their module when a test runs; here that name is a Sandlot client, so those tests
drive real Sandlot sessions through ``sandlot_client.openai_agents``. Their only host
assumption this rewrites is the manifest's root: they point it at a host temporary directory,
where a Sandlot session's workspace is ``/workspace``. The service is named by
``SANDLOT_URL``, ``SANDLOT_API_KEY`` and ``SANDLOT_ENVIRONMENT``."""

from __future__ import annotations

import os
from typing import Any

import pytest
from agents.sandbox.manifest import Manifest
from agents.sandbox.session.sandbox_session import SandboxSession
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec

from sandlot_client.openai_agents import SandlotSandboxClient, SandlotSandboxClientOptions

WORKSPACE = "/workspace"


class UpstreamSandlotClient(SandlotSandboxClient):
    """Takes the local client's arguments (what they ask of the host means nothing here)."""

    def __init__(self, *args: Any, instrumentation: Any = None, **kwargs: Any) -> None:
        super().__init__(
            os.environ["SANDLOT_URL"],
            os.environ["SANDLOT_API_KEY"],
            options=SandlotSandboxClientOptions(environment=os.environ["SANDLOT_ENVIRONMENT"]),
            instrumentation=instrumentation,
        )

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: SandlotSandboxClientOptions | None = None,
    ) -> SandboxSession:
        if manifest is not None and manifest.root != WORKSPACE:
            manifest = manifest.model_copy(update={"root": WORKSPACE})
        return await super().create(snapshot=snapshot, manifest=manifest, options=options)


@pytest.fixture(autouse=True)
def _sandlot_instead_of_unix_local(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if hasattr(request.module, "UnixLocalSandboxClient"):
        monkeypatch.setattr(request.module, "UnixLocalSandboxClient", UpstreamSandlotClient)
