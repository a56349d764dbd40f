"""Sandlot's Python client.

    from sandlot_client import Sandlot

    with Sandlot("http://127.0.0.1:8480", api_key) as client:
        with client.session(environment="py") as s:
            print(s.shell.run("ls")["stdout"])

``AsyncSandlot`` is the same API with ``await``. The low-level client generated from the
service's OpenAPI document is :mod:`sandlot_client._api` (never edited by hand).

Framework adapters, each an optional extra: :mod:`sandlot_client.openai_agents` (the OpenAI
Agents SDK's sandbox provider; ``sandlot-client[agents]``) and :mod:`sandlot_client.langfun_env`
(a ``langfun.env`` sandbox service; ``sandlot-client[langfun]``).
"""

from sandlot_client.aio import AsyncProcess, AsyncPty, AsyncSandlot, AsyncSession, OutputStream, output_bytes
from sandlot_client.errors import (
    ClientClosed,
    Conflict,
    EnvironmentOutage,
    InvalidInput,
    NoCapacity,
    NotAuthenticated,
    NotFound,
    NotPermitted,
    PayloadTooLarge,
    QuotaExceeded,
    RuntimeUnavailable,
    SandboxStateError,
    SandlotError,
    SessionEnded,
    TransportError,
)
from sandlot_client.sync import Process, Pty, Sandlot, Session

__all__ = [
    "AsyncProcess",
    "AsyncPty",
    "AsyncSandlot",
    "AsyncSession",
    "ClientClosed",
    "Conflict",
    "EnvironmentOutage",
    "InvalidInput",
    "NoCapacity",
    "NotAuthenticated",
    "NotFound",
    "NotPermitted",
    "OutputStream",
    "PayloadTooLarge",
    "Process",
    "Pty",
    "QuotaExceeded",
    "RuntimeUnavailable",
    "SandboxStateError",
    "Sandlot",
    "SandlotError",
    "Session",
    "SessionEnded",
    "TransportError",
    "output_bytes",
]
