"""A body refused for its size is read to its end before the refusal goes out.

A route refuses a body over its limit (413) as soon as it knows: from ``Content-Length``, before
reading any of it, or part way through a stream. The server then closes the connection while the
client is still sending, and a client that writes the whole body before it reads (most do; an
async ``httpx`` always does) sees a broken connection instead of the 413: the Python SDK reported
it as a lost connection, and an adapter as a lost sandbox. So the refusal waits until the rest of
the body has been read and dropped, within bounds: at most ``limit`` bytes (the largest body any
route takes, so a refused body costs no more than an accepted one) and ``DRAIN_SECONDS``; a body
announced beyond ``limit`` is not read at all.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from litestar.types import ASGIApp, Message, Receive, ReceiveMessage, Scope, Send

__all__ = ["DRAIN_SECONDS", "DrainRefused"]

DRAIN_SECONDS = 60.0


def _announced(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


class DrainRefused:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
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
            if message["type"] == "http.response.start" and message["status"] == 413 and state["more"]:
                await self._drain(scope, tracked, state)
            await send(message)

        await self.app(scope, tracked, answer)

    async def _drain(self, scope: Scope, tracked: Receive, state: dict[str, Any]) -> None:
        announced = _announced(scope)
        if announced is not None and announced > self.limit:
            return  # more than any route takes: not worth reading
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(DRAIN_SECONDS):
                while state["more"] and state["seen"] <= self.limit:
                    await tracked()
