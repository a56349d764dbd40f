"""ASGI middleware that runs once a request is routed.

:class:`RefuseNul` refuses what no route may see: a NUL byte in a path or query string can name
nothing here, and PostgreSQL refuses it in any text value, so it is answered with a 422 before
the handler (a WebSocket is closed with 1008). :class:`RequestTracing` binds the app's tracer and
names the request span by the route template, which only exists after routing.
:class:`Accountable` puts a key's rate allowance in ``RateLimit-*`` headers and records every
state-changing request and every WebSocket (``WS <route>``) a key makes in the audit trail.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote_to_bytes

from litestar.types import ASGIApp, HTTPResponseBodyEvent, HTTPResponseStartEvent, Receive, Scope, Send
from opentelemetry.trace import Tracer

from sandlot.api.deps import ALLOWANCE, CALLER
from sandlot.observability.tracing import bind_tracer, name_request_span, route_of, unbind_tracer
from sandlot.services.accounts import Principal
from sandlot.services.audit import AuditEntry

__all__ = ["Accountable", "RefuseNul", "RequestTracing"]

_CHANGES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_KEPT = 8192  # bytes of a response read back for the new object's id or the error code


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


class Accountable:
    """Adds the ``RateLimit-*`` headers of the caller's key to the response, and once it is
    answered records a state-changing request in the audit trail: who (tenant, key), what
    (method and route), on what (the path's ids, or the id of what it created) and how it ended
    (status and error code). Requests no key made (refused sign-ins, health checks) are not
    recorded."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await self._socket(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        seen: dict[str, Any] = {"status": 500, "body": b""}

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                seen["status"] = message["status"]
                allowance = scope.get("state", {}).get(ALLOWANCE)
                if allowance is not None:
                    extra = [(k.lower().encode(), v.encode()) for k, v in allowance.headers().items()]
                    message = {**message, "headers": [*message.get("headers", []), *extra]}
            elif message["type"] == "http.response.body" and len(seen["body"]) < _KEPT:
                seen["body"] += message.get("body", b"")[:_KEPT]
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            caller = scope.get("state", {}).get(CALLER)
            if caller is not None and scope.get("method") in _CHANGES:
                _record(scope, caller, seen["status"], seen["body"])

    async def _socket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket a key opened is recorded once it ends: 101 when its handshake was
        accepted, else the status its refusal closed with (``api.ws.before_accept``)."""
        seen: dict[str, Any] = {"status": 500, "body": b""}

        async def watch(message: Any) -> None:
            if message["type"] == "websocket.accept":
                seen["status"] = 101
            elif message["type"] == "websocket.close" and seen["status"] != 101:
                code = message.get("code", 1000)
                seen["status"] = code - 4000 if 4000 <= code < 5000 else 403
                seen["body"] = json.dumps({"code": str(message.get("reason", "")).partition(":")[0]}).encode()
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            caller = scope.get("state", {}).get(CALLER)
            if caller is not None:
                _record(scope, caller, seen["status"], seen["body"])


def _record(scope: Scope, caller: Principal, status: int, body: bytes) -> None:
    answer: dict[str, Any] = {}
    try:
        parsed = json.loads(body) if body[:1] == b"{" else {}
        answer = parsed if isinstance(parsed, dict) else {}
    except ValueError:
        pass  # not JSON, or longer than what was kept
    target = ",".join(str(v) for v in (scope.get("path_params") or {}).values())
    if status == 201 and isinstance(answer.get("id"), str):
        target = f"{target},{answer['id']}" if target else answer["id"]
    route = route_of(scope) or scope.get("path", "")
    client = scope.get("client") or ("",)
    method = "WS" if scope["type"] == "websocket" else scope.get("method")
    event = AuditEntry(
        tenant_id=caller.tenant_id,
        key_id=caller.key_id,
        operator=caller.is_operator,
        action=f"{method} {route}"[:200],
        target=target[:300],
        status=status,
        outcome="ok" if status < 400 else str(answer.get("code") or status)[:40],
        client=str(client[0])[:64],
    )
    scope["app"].state.services.audit.record(event)
