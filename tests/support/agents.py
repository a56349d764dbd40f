"""The OpenAI Agents SDK's session wrapper, opened to the Sandlot session under it."""

from __future__ import annotations

from typing import Any

from sandlot_client.openai_agents import SandlotSandboxSession


def inner(session: Any) -> SandlotSandboxSession:
    found = session._inner
    assert isinstance(found, SandlotSandboxSession)
    return found
