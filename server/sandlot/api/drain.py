"""A request's body is read to its end before the answer goes out.

A route may answer before it has read the whole body: a body over its limit is refused (413)
as soon as ``Content-Length`` says so, a bad key (401) or a session no longer active (409) is
refused before the body is looked at, a command that stops reading its stdin ends early. The
server would then close the connection while the client is still sending, and a client that
writes the whole body before it reads (most do; an async ``httpx`` always does) sees a broken
connection instead of the answer: the Python SDK reported a refused oversized body as a lost
connection, and an adapter as a lost sandbox. So the answer waits until the rest of the body has
been read and dropped, within bounds: at most ``limit`` bytes (the largest body any route takes,
so an unread body costs no more than an accepted one) and ``DRAIN_SECONDS``; a body announced
beyond ``limit`` is not read at all (the connection is closed as before).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

__all__ = ["DRAIN_SECONDS", "DrainUnread"]

DRAIN_SECONDS = 60.0


def _announced(scope: Scope) -> int | None:
    """The body's announced length: 0 when there is none, None when it is chunked."""
    length = 0
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            length = int(value) if value.isdigit() else 0
        elif name == b"transfer-encoding":
            return None
    return length


class DrainUnread:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        announced = _announced(scope) if scope["type"] == "http" else 0
        if announced == 0:  # no body (or not HTTP): nothing can be left unread
            await self.app(scope, receive, send)
            return
        state: dict[str, Any] = {"more": True, "seen": 0}

        async def tracked() -> ReceiveMessage:
            message: Any = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                state["more"] = False
            state["seen"] += len(message.get("body", b""))
            return message

        async def answer(message: Message) -> None:
            readable = announced is None or announced <= self.limit
            if message["type"] == "http.response.start" and state["more"] and readable:
                await self._drain(tracked, state)
            await send(message)

        await self.app(scope, tracked, answer)

    async def _drain(self, tracked: Receive, state: dict[str, Any]) -> None:
        with contextlib.suppress(TimeoutError, EOFError):  # a slow or cut body (api/bounds.py)
            async with asyncio.timeout(DRAIN_SECONDS):
                while state["more"] and state["seen"] <= self.limit:
                    await tracked()
