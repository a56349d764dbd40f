"""Helpers for the hostile-WebSocket tests: one tenant's terminals on a server of its own,
and the small exchanges every test ends with (a keystroke echo, a close code, a refusal)."""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.integration.conftest import Headers

__all__ = ["Box", "closed_with", "echo", "holds", "next_control", "read_until", "refused", "still_serves"]


@dataclass
class Box:
    """One tenant on its own server: a session, a sandbox used directly, and the server's log."""

    url: str
    headers: Headers
    session: str
    sandbox: str
    log: Path
    http: httpx.AsyncClient

    def path(self, kind: str) -> str:
        return (
            f"/v1/sessions/{self.session}/pty" if kind == "session" else f"/v1/sandboxes/{self.sandbox}/pty"
        )

    def ws(self, path: str) -> str:
        return f"ws{self.url.removeprefix('http')}{path}"

    def pty(self, kind: str, query: str = "", **options: object) -> websockets.connect:
        return websockets.connect(
            self.ws(self.path(kind) + query),
            additional_headers=self.headers,
            **options,  # type: ignore[arg-type]
        )

    def tracebacks(self) -> str:
        text = self.log.read_text(errors="replace")
        return text[text.find("Traceback") - 2000 :] if "Traceback" in text else ""


async def read_until(conn: ClientConnection, needle: bytes, timeout: float = 20) -> bytes:
    seen = b""
    async with asyncio.timeout(timeout):
        while needle not in seen:
            message = await conn.recv()
            if isinstance(message, bytes):
                seen += message
    return seen


async def next_control(conn: ClientConnection, timeout: float = 20) -> dict:
    """The next JSON frame from the server that is not a heartbeat (output is skipped)."""
    async with asyncio.timeout(timeout):
        while True:
            message = await conn.recv()
            if isinstance(message, str) and (frame := json.loads(message))["type"] != "heartbeat":
                return dict(frame)


async def echo(conn: ClientConnection) -> None:
    """A keystroke round trip: the shell computes something only a live shell could."""
    tag = secrets.token_hex(3)
    await conn.send(f"echo {tag}-$((6*7))\n".encode())
    await read_until(conn, f"{tag}-42".encode())


async def still_serves(box: Box, kind: str) -> None:
    """A fresh, well-behaved connection works, and nothing went wrong in the server."""
    async with box.pty(kind) as conn:
        await echo(conn)
    assert not box.tracebacks(), box.tracebacks()


async def closed_with(conn: ClientConnection, timeout: float = 20) -> tuple[int, str]:
    async with asyncio.timeout(timeout):
        try:
            while True:
                await conn.recv()
        except ConnectionClosed as exc:
            assert exc.rcvd is not None, "the server hung up without a close frame"
            return exc.rcvd.code, exc.rcvd.reason


async def holds(box: Box, kind: str, check: str) -> bool:
    """Whether the shell condition ``check`` holds, asked in a fresh terminal."""
    tag = secrets.token_hex(3)
    async with box.pty(kind) as conn:
        await conn.send(f"{check} && echo {tag}-$((1+1)) || echo {tag}-$((1+2))\n".encode())
        seen = b""
        async with asyncio.timeout(20):
            while f"{tag}-2".encode() not in seen and f"{tag}-3".encode() not in seen:
                message = await conn.recv()
                seen += message if isinstance(message, bytes) else b""
    return f"{tag}-2".encode() in seen


async def refused(url: str, headers: Headers | None = None) -> int:
    """The HTTP status that refused the handshake (a close before accepting is one)."""
    with pytest.raises(InvalidStatus) as caught:
        async with websockets.connect(url, additional_headers=headers) as conn:
            await conn.recv()
    return caught.value.response.status_code
