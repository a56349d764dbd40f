"""WebSocket helpers: a service URL's ``ws`` form, and reading a connection until a needle."""

from __future__ import annotations

import asyncio

from websockets.asyncio.client import ClientConnection


def ws(url: str, path: str) -> str:
    return f"ws{url.removeprefix('http')}{path}"


async def read_until(conn: ClientConnection, needle: bytes, timeout: float = 20) -> bytes:
    seen = b""
    async with asyncio.timeout(timeout):
        while needle not in seen:
            message = await conn.recv()
            if isinstance(message, bytes):
                seen += message
    return seen
