"""What one client may hold open, and how slowly it may send: the first middleware a request
meets.

A connection costs the server something for as long as it is open, whoever holds it; without a
bound, connections that send a body a byte at a time (or never finish it) hold a request each
for as long as the client likes, and a client with a key holds an exec in a sandbox on the
``/stream`` routes too. So:

* **Open at once, per client address** (``client_max_open``): requests and WebSockets one
  address has open in this process. Beyond it a request is answered 429 at once, its body never
  read and its connection closed; a WebSocket is refused at its handshake. Counted before any
  key is looked at, so it bounds unauthenticated work too.
* **WebSockets per key** (``key_max_websockets``): counted when a key is admitted on a
  WebSocket (:meth:`Bounds.hold_socket`, from ``api.deps.admit``) and released when it ends.
* **Body pace**: each read of a body may wait ``body_read_timeout`` seconds at most, and the
  time spent waiting for it all may pass that grace by one second per ``body_min_rate`` bytes
  received (time the route spends on its own work, before or between reads, is not counted).
  A slower body raises :class:`~sandlot.domain.errors.SlowBody` where the route reads it (a
  408), and the answer closes the connection. A body that ends before its announced length raises
  :class:`~sandlot.domain.errors.CutBody` (a 400) instead of the framework's 500, so what was
  being written is dropped as any refused input is.

The request headers have their own timeout in the HTTP server (``header_read_timeout``, given to
granian by ``sandlot serve``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from litestar.types import ASGIApp, Message, Receive, Scope, Send

from sandlot.domain.errors import CutBody, RateLimited, SandlotError, SlowBody
from sandlot.services.accounts import Principal

__all__ = ["BOUNDS", "Bounds"]

#: Where a request's scope state keeps the middleware, for ``admit`` to count a WebSocket's key.
BOUNDS = "sandlot.bounds"
_SOCKET_KEY = "sandlot.socket_key"


class Bounds:
    def __init__(
        self,
        app: ASGIApp,
        *,
        client_max_open: int,
        key_max_websockets: int,
        body_read_timeout: float,
        body_min_rate: int,
    ) -> None:
        self.app = app
        self.client_max_open = client_max_open
        self.key_max_websockets = key_max_websockets
        self.grace = body_read_timeout
        self.min_rate = body_min_rate
        self.open: Counter[str] = Counter()  # client address -> requests and sockets open
        self.sockets: Counter[str] = Counter()  # key id -> WebSockets open

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        with self._counted(_address(scope)) as admitted:
            if not admitted:
                await _refuse(scope, send, "too many requests open from this address at once")
                return
            state = scope.setdefault("state", {})
            state[BOUNDS] = self
            try:
                if scope["type"] == "http":
                    await self._paced(scope, receive, send)
                else:
                    await self.app(scope, receive, send)
            finally:
                key = state.pop(_SOCKET_KEY, None)
                if key is not None:
                    self._release(self.sockets, key)

    def hold_socket(self, scope: Scope, principal: Principal) -> None:
        """Count a WebSocket against its key's cap (RateLimited beyond); released when it ends."""
        state = scope.setdefault("state", {})
        if scope["type"] != "websocket" or _SOCKET_KEY in state:
            return
        if self.sockets[principal.key_id] >= self.key_max_websockets:
            raise RateLimited(
                f"this key holds {self.key_max_websockets} WebSockets already; close one first",
                retry_after=1,
            )
        self.sockets[principal.key_id] += 1
        state[_SOCKET_KEY] = principal.key_id

    @contextmanager
    def _counted(self, address: str) -> Iterator[bool]:
        if self.open[address] >= self.client_max_open:
            yield False
            return
        self.open[address] += 1
        try:
            yield True
        finally:
            self._release(self.open, address)

    @staticmethod
    def _release(counts: Counter[str], name: str) -> None:
        counts[name] -= 1
        if counts[name] <= 0:
            del counts[name]

    async def _paced(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the time counted is the time spent waiting for the body, not the route's own work
        pace = _Pace(more=_has_body(scope))

        async def paced() -> Any:
            if pace.failed is not None:  # the body is given up: never wait for it again
                raise pace.failed[0](pace.failed[1])
            if not pace.more:
                return await receive()
            allowed = self.grace + pace.bytes / self.min_rate - pace.waited
            began = time.monotonic()
            try:
                async with asyncio.timeout(max(0.001, min(self.grace, allowed))):
                    message: Any = await receive()
            except TimeoutError:
                pace.closing = True
                waited = pace.waited + time.monotonic() - began
                pace.failed = (
                    SlowBody,
                    f"the request body came too slowly: {pace.bytes} bytes in {waited:.0f} s",
                )
                raise SlowBody(pace.failed[1]) from None
            finally:
                pace.waited += time.monotonic() - began
            if message["type"] == "http.disconnect":
                pace.failed = (CutBody, "the request body ended before its announced length")
                raise CutBody(pace.failed[1])
            pace.bytes += len(message.get("body") or b"")
            pace.more = bool(message.get("more_body", False))
            return message

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and pace.closing:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*headers, (b"connection", b"close")]}
            await send(message)

        await self.app(scope, paced, closing)


@dataclass(slots=True)
class _Pace:
    more: bool
    bytes: int = 0
    waited: float = 0.0  # seconds spent waiting for the body
    closing: bool = False  # the answer closes the connection
    # why the body was given up: the error's class and message, not the error itself, whose
    # traceback would hold the server's receive (and so the connection open) in a cycle
    failed: tuple[type[SandlotError], str] | None = None


def _address(scope: Scope) -> str:
    client = scope.get("client") or ("",)
    return str(client[0])


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding" or (name == b"content-length" and value.strip() not in (b"", b"0")):
            return True
    return False


async def _refuse(scope: Scope, send: Send, detail: str) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1013, "reason": f"rate_limited: {detail}"})
        return
    body = json.dumps(
        {
            "type": "https://sandlot.dev/errors/rate_limited",
            "title": "rate limited",
            "status": 429,
            "code": "rate_limited",
            "detail": detail,
            "retryable": True,
        }
    ).encode()
    headers = [
        (b"content-type", b"application/problem+json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
