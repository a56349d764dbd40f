"""The WebSocket side of the SDK: process output streams and terminals.

These routes are not in the OpenAPI document (it describes REST only), so they stay hand-made
here, apart from the REST layer: :class:`OutputStream` resumes a dropped connection from the
bytes already received, :class:`AsyncPty` speaks the terminal's frame protocol.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import websockets
from websockets.exceptions import ConnectionClosed

from sandlot_client.errors import SandlotError, TransportError

if TYPE_CHECKING:
    from sandlot_client._processes import AsyncProcess
    from sandlot_client.aio import AsyncSandlot

__all__ = ["AsyncPty", "OutputStream", "connect"]


def connect(client: AsyncSandlot, path: str) -> websockets.connect:
    """A WebSocket to ``path`` on the service, authenticated like the REST calls: await it, or
    use it as ``async with`` (which closes it on the way out)."""
    headers = {"Authorization": f"Bearer {client.api_key}"}
    return websockets.connect(client.ws_url(path), additional_headers=headers, max_size=None)


class OutputStream:
    """An async iterator of output chunks; ``offset`` is how many bytes were received;
    ``exit`` is the final status frame once the stream ended."""

    def __init__(self, process: AsyncProcess, offset: int, reconnect: bool, max_reconnects: int) -> None:
        self._p = process
        self.offset = offset
        self.reconnects = 0
        self.exit: dict[str, Any] | None = None
        self._reconnect = reconnect
        self._max = max_reconnects
        self._conn: Any = None

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks()

    async def drop(self) -> None:
        """Close the current connection (as a network failure would); iteration resumes."""
        if self._conn is not None:
            await self._conn.close()

    async def _chunks(self) -> AsyncIterator[bytes]:
        client = self._p._s._client
        while self.exit is None:
            try:
                async with connect(client, f"{self._p._path}/stream?offset={self.offset}") as conn:
                    self._conn = conn
                    async for message in conn:
                        if isinstance(message, str):
                            self.exit = _final_frame(message)
                            break
                        self.offset += len(message)
                        yield message
            except (ConnectionClosed, OSError) as exc:
                if not self._reconnect or self.reconnects >= self._max:
                    raise TransportError(f"output stream lost: {exc}") from exc
            finally:
                self._conn = None
            if self.exit is None:
                if not self._reconnect or self.reconnects >= self._max:
                    raise TransportError("output stream ended early")
                self.reconnects += 1


def _final_frame(message: str) -> dict[str, Any]:
    frame: dict[str, Any] = json.loads(message)
    if frame.get("type") == "error":
        raise SandlotError(frame.get("message", "stream error"), code=frame.get("code", "error"))
    return frame


class AsyncPty:
    """A terminal: ``send`` keystrokes, ``resize``, ``signal``, ``recv`` output (None at exit)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    async def send(self, data: str | bytes) -> None:
        await self._conn.send(data.encode() if isinstance(data, str) else data)

    async def resize(self, cols: int, rows: int) -> None:
        await self._conn.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))

    async def signal(self, name: str = "INT") -> None:
        await self._conn.send(json.dumps({"type": "signal", "signal": name}))

    async def recv(self) -> bytes | None:
        while True:
            try:
                message = await self._conn.recv()
            except ConnectionClosed:
                return None
            if isinstance(message, bytes):
                return message
            if json.loads(message).get("type") == "exit":
                return None

    async def read_until(self, needle: bytes, timeout: float = 30) -> bytes:
        seen = b""
        async with asyncio.timeout(timeout):
            while needle not in seen:
                chunk = await self.recv()
                if chunk is None:
                    break
                seen += chunk
        return seen

    async def close(self) -> None:
        await self._conn.close()
