"""What the WebSocket handlers share: run several coroutines until the first one ends."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from typing import Any

from litestar import WebSocket
from litestar.exceptions import WebSocketDisconnect

from sandlot.domain.errors import SandlotError

__all__ = ["first_to_finish", "until_disconnected"]


async def first_to_finish(*work: Coroutine[Any, Any, None]) -> None:
    """Run ``work`` concurrently; when one ends (or fails), cancel the others and wait for
    them. A client going away surfaces as one of them ending, so nothing is left running."""
    tasks = {asyncio.ensure_future(w) for w in work}
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError, SandlotError):
                await task


async def until_disconnected(socket: WebSocket) -> None:
    """Return once the client has gone away (or sent a close); other frames are ignored.
    Running this beside a sender answers the client's close handshake at once."""
    while True:
        message = await socket.receive()
        if message["type"] == "websocket.disconnect":
            return
