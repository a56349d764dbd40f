"""A WebSocket client at the byte level, for the frames a well-behaved library refuses to send:
text frames that are not UTF-8, frames written behind the upgrade request before the server
answered it, frames after the client's own close. RFC 6455 framing, masked as a client must."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import struct
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["BINARY", "CLOSE", "TEXT", "Raw", "frame"]

TEXT, BINARY, CLOSE, PING, PONG = 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes, *, fin: bool = True) -> bytes:
    """One masked client frame."""
    head = bytes([(0x80 if fin else 0) | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + struct.pack("!H", size)
    else:
        head += bytes([0x80 | 127]) + struct.pack("!Q", size)
    mask = os.urandom(4)
    key = (mask * (size // 4 + 1))[:size]
    body = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(size, "big")
    return head + mask + body


class Raw:
    """One connection: ``open`` sends the upgrade request (and ``early`` bytes right behind
    it), ``send`` writes raw frames, ``recv`` reads the server's next frame."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int) -> None:
        self.reader = reader
        self.writer = writer
        self.status = status

    @classmethod
    async def open(cls, url: str, headers: Mapping[str, str] | None = None, early: bytes = b"") -> Raw:
        parts = urlsplit(url)
        reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
        lines = [
            f"GET {parts.path}?{parts.query} HTTP/1.1",
            f"Host: {parts.hostname}:{parts.port}",
            "Upgrade: websocket",
            "Connection: Upgrade",
            f"Sec-WebSocket-Key: {base64.b64encode(os.urandom(16)).decode()}",
            "Sec-WebSocket-Version: 13",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + early)
        await writer.drain()
        answer = await reader.readuntil(b"\r\n\r\n")
        return cls(reader, writer, int(answer.split()[1]))

    async def send(self, *frames: bytes) -> None:
        self.writer.write(b"".join(frames))
        await self.writer.drain()

    async def recv(self) -> tuple[int, bytes] | None:
        """(opcode, payload) of the server's next frame; None once the connection ended."""
        try:
            first, second = await self.reader.readexactly(2)
            size = second & 0x7F
            if size == 126:
                (size,) = struct.unpack("!H", await self.reader.readexactly(2))
            elif size == 127:
                (size,) = struct.unpack("!Q", await self.reader.readexactly(8))
            return first & 0x0F, await self.reader.readexactly(size)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None

    async def close_code(self) -> tuple[int, str] | None:
        """Read until the server's close frame: (code, reason), or None if it just hung up."""
        while (got := await self.recv()) is not None:
            opcode, payload = got
            if opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                return code, payload[2:].decode(errors="replace")
        return None

    async def aclose(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()
