"""ASGI middleware that runs once a request is routed.

:class:`RefuseNul` refuses what no route may see: a NUL byte in a path or query string can name
nothing here, and PostgreSQL refuses it in any text value, so it is answered with a 422 before
the handler (a WebSocket is closed with 1008). :class:`RequestTracing` binds the app's tracer and
names the request span by the route template, which only exists after routing.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_to_bytes

from litestar.types import ASGIApp, HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send
from opentelemetry.trace import Tracer

from sandlot.observability.tracing import bind_tracer, name_request_span, unbind_tracer

__all__ = ["RefuseNul", "RequestTracing"]


def _has_nul(scope: Scope) -> str | None:
    if "\x00" in scope.get("path", ""):
        return "path"
    query = scope.get("query_string", b"")
    if query and b"\x00" in unquote_to_bytes(query):
        return "query"
    return None


class RefuseNul:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        where = _has_nul(scope) if scope["type"] in ("http", "websocket") else None
        if where is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": "NUL byte"})
            return
        body: dict[str, Any] = {
            "type": "https://sandlot.dev/errors/validation_error",
            "title": "validation error",
            "status": 422,
            "code": "validation_error",
            "detail": f"the {where} contains a NUL byte",
            "errors": [{"field": where, "message": "contains a NUL byte"}],
        }
        data = json.dumps(body).encode()
        start: HTTPResponseStartEvent = {
            "type": "http.response.start",
            "status": 422,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(data)).encode()),
            ],
        }
        await send(start)
        body_event: HTTPResponseBodyEvent = {"type": "http.response.body", "body": data, "more_body": False}
        await send(body_event)


class RequestTracing:
    """Binds the app's tracer for the request (Sandlot's own spans go to this app's provider)
    and names the request span by its route template."""

    def __init__(self, app: ASGIApp, tracer: Tracer) -> None:
        self.app = app
        self.tracer = tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = bind_tracer(self.tracer)
        try:
            name_request_span(scope)
            await self.app(scope, receive, send)
        finally:
            unbind_tracer(token)
