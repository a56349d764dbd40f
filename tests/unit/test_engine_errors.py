"""What a failed engine call is reported as."""

from __future__ import annotations

import aiohttp

from sandlot.domain.errors import RuntimeUnavailable, SandboxStateError
from sandlot.runtime.docker_streams import engine_error


def test_an_archive_cut_mid_stream_is_the_sandbox_gone_not_the_engine_unreachable() -> None:
    # the engine answered, then its archive stopped: the stopped container was removed while it
    # was read (it was a 503 "docker engine unreachable during archive")
    cut = aiohttp.ClientPayloadError("Response payload is not completed")
    assert isinstance(engine_error(cut, "archive"), SandboxStateError)
    # a connection that failed before any answer is still the engine's
    refused = aiohttp.ClientConnectionError("connection refused")
    assert isinstance(engine_error(refused, "archive"), RuntimeUnavailable)
