"""What the WebSocket handlers share: run several coroutines until the first one ends, and
receive a client's frames within a size bound.

Close codes the handlers use: 1000 (done), 1009 (a frame over :data:`MAX_FRAME_BYTES`),
1011 (a refusal once the handshake was accepted, its reason ``code: message``; the sandbox could
not be reached; or a bug: the latter is logged with its traceback).
Refusals (no key, a bad token, a stranger's terminal, a key over its sockets) come before the
handshake is accepted: granian answers them with HTTP 403, and the app's close code says
``4000 + status`` for the audit trail (:func:`before_accept`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any

from litestar import WebSocket
from litestar.exceptions import WebSocketDisconnect, WebSocketException

from sandlot.api.errors import STATUS_BY_CODE
from sandlot.domain.errors import SandlotError

__all__ = [
    "MAX_FRAME_BYTES",
    "TOO_BIG",
    "Close",
    "before_accept",
    "first_to_finish",
    "receive_frame",
    "refusal",
    "until_disconnected",
]

log = logging.getLogger(__name__)

#: The largest frame (its payload in bytes, a text frame's as UTF-8) a client may send.
#: Keystrokes and control frames are small, and a terminal splits a paste into many frames.
#: The ASGI server has already read a frame whole when the app sees it, so this bounds how
#: long the app holds on to one (and what it writes into a terminal at once), not what the
#: server reads. A module constant until ``Settings`` has a field for it.
MAX_FRAME_BYTES = 1 << 20
#: RFC 6455 "message too big".
TOO_BIG = 1009
_INTERNAL = 1011
#: RFC 6455: a close frame's reason is at most 123 bytes of UTF-8.
_REASON_BYTES = 123
_EXPECTED = (asyncio.CancelledError, WebSocketDisconnect, RuntimeError, SandlotError)


@dataclass(frozen=True)
class Close:
    """How a handler's task asks for the socket to be closed once every task has stopped."""

    code: int = 1000
    reason: str = ""


def before_accept(exc: SandlotError) -> WebSocketException:
    """A refusal before the handshake is accepted (no key, a bad token, over a limit), as the
    close Litestar sends for it: ``4000 + status`` and ``code: message``. The client sees
    granian's HTTP 403 either way; the code is what the audit trail records (``api/middleware``)."""
    status = STATUS_BY_CODE.get(exc.code, 500)
    reason = f"{exc.code}: {exc.message}".encode(errors="replace")[:_REASON_BYTES]
    return WebSocketException(detail=reason.decode(errors="ignore"), code=4000 + status)


def refusal(exc: SandlotError) -> Close:
    """The close after a refusal that came once the handshake was accepted: 1011, its reason
    ``code: message`` cut to what a close frame holds. Handlers send the error as a JSON frame
    first, but the close frame is what always arrives: granian closes the TCP connection right
    after it, so a client frame the app never read makes the kernel answer with a reset, and a
    client may drop the frames it read together with the close (websockets' sync client does
    when its echo of the close fails)."""
    reason = f"{exc.code}: {exc.message}".encode(errors="replace")[:_REASON_BYTES]
    return Close(_INTERNAL, reason.decode(errors="ignore"))


async def first_to_finish(socket: WebSocket, *work: Coroutine[Any, Any, Close | None]) -> None:
    """Run ``work`` concurrently; when one ends (or fails), cancel the others and wait for
    them. A client going away surfaces as one of them ending, so nothing is left running.

    Then close the socket as the task that ended asked (a :class:`Close`; None when the client
    is gone or the socket was closed already), or with 1011 after a failure nobody expected
    (a bug, logged with its traceback) rather than ending without a word. The tasks must not
    close the socket while another one waits in ``receive``: granian then drops the close
    frame and the connection hangs open."""
    tasks = [asyncio.ensure_future(w) for w in work]
    ending: Close | None = None
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        finished = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            try:
                await task
            except _EXPECTED:
                pass
            except Exception:
                log.exception("a WebSocket handler failed")
                ending = Close(_INTERNAL, "internal error")
    ending = ending or next((t.result() for t in finished if t.result() is not None), None)
    if ending is not None:
        with contextlib.suppress(*_EXPECTED):
            await socket.close(code=ending.code, reason=ending.reason)


async def receive_frame(socket: WebSocket) -> bytes | str | None:
    """The client's next frame (bytes for binary, str for text), or None once it has gone away
    or sent a close. A frame over :data:`MAX_FRAME_BYTES` closes the socket with 1009 and a
    reason that names the limit, and is None too."""
    message = await socket.receive()
    if message["type"] == "websocket.disconnect":
        return None
    raw = message.get("bytes")
    data: bytes | str = raw if isinstance(raw, bytes) else str(message.get("text") or "")
    size = len(data) if isinstance(data, bytes) else len(data.encode(errors="surrogatepass"))
    if size > MAX_FRAME_BYTES:
        await socket.close(code=TOO_BIG, reason=f"frames are limited to {MAX_FRAME_BYTES} bytes")
        return None
    return data


async def until_disconnected(socket: WebSocket) -> Close | None:
    """Return once the client has gone away (or sent a close, or a frame over the limit);
    other frames are ignored. Running this beside a sender answers the client's close
    handshake at once."""
    while await receive_frame(socket) is not None:
        pass
    return None
