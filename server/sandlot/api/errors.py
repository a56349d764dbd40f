"""One table from error codes to HTTP statuses, and problem-details responses.

Domain and runtime code raise :class:`~sandlot.domain.errors.SandlotError`; only this module
knows about HTTP. A store that cannot be reached (the database down or restarting: the
driver's connection errors, refused or dropped connections) is a 503 ``store_unavailable`` a
client may retry, never a 500. Unexpected errors become a 500 problem with no traceback in the
body.
"""

from __future__ import annotations

import logging
from typing import Any

from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from sandlot.domain.errors import NoCapacity, RateLimited, SandlotError

__all__ = ["STATUS_BY_CODE", "exception_handlers", "problem"]

log = logging.getLogger(__name__)

STATUS_BY_CODE: dict[str, int] = {
    "invalid_input": 422,
    "validation_error": 422,
    "path_outside_workspace": 422,
    "image_not_found": 422,
    "not_found": 404,
    "conflict": 409,
    "session_ended": 409,
    "illegal_transition": 409,
    "quota_exceeded": 429,
    "rate_limited": 429,
    "payload_too_large": 413,
    "request_timeout": 408,
    "incomplete_body": 400,
    "disk_full": 507,
    "not_authenticated": 401,
    "not_permitted": 403,
    "no_capacity": 503,
    "sandbox_state_error": 502,
    "environment_outage": 503,
    "runtime_unavailable": 503,
    "store_unavailable": 503,
    "internal_error": 500,
}

_CODE_BY_HTTP = {
    400: "bad_request",
    401: "not_authenticated",
    403: "not_permitted",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
}


_RESERVED = frozenset({"type", "title", "status", "code", "detail", "retryable", "headers"})


def problem(
    status: int, code: str, detail: str, headers: dict[str, str] | None = None, **extra: Any
) -> Response[dict[str, Any]]:
    body: dict[str, Any] = {
        "type": f"https://sandlot.dev/errors/{code}",
        "title": code.replace("_", " "),
        "status": status,
        "code": code,
        "detail": detail,
        **extra,
    }
    return Response(body, status_code=status, media_type="application/problem+json", headers=headers)


def _sandlot_error(_: Request[Any, Any, Any], exc: SandlotError) -> Response[dict[str, Any]]:
    status = STATUS_BY_CODE.get(exc.code, 500)
    headers = None
    if isinstance(exc, NoCapacity | RateLimited):
        headers = {"Retry-After": str(exc.retry_after)}
    extra = {
        (f"resource_{k}" if k in _RESERVED else k): v
        for k, v in exc.extra.items()
        if isinstance(v, str | int | float | bool)
    }
    return problem(status, exc.code, exc.message, headers, retryable=exc.retryable, **extra)


def _validation(_: Request[Any, Any, Any], exc: ValidationException) -> Response[dict[str, Any]]:
    errors = []
    for item in exc.extra if isinstance(exc.extra, list) else []:
        if isinstance(item, dict):
            errors.append({"field": item.get("key"), "message": item.get("message")})
    detail = exc.detail
    if errors:
        detail = "; ".join(f"{e['field'] or 'body'}: {e['message']}" for e in errors)
    return problem(422, "validation_error", detail, errors=errors)


def _http(_: Request[Any, Any, Any], exc: HTTPException) -> Response[dict[str, Any]]:
    status = exc.status_code
    code = _CODE_BY_HTTP.get(status, "bad_request" if status < 500 else "internal_error")
    return problem(status, code, exc.detail, dict(exc.headers or {}) or None)


def _undecodable(_: Request[Any, Any, Any], exc: UnicodeDecodeError) -> Response[dict[str, Any]]:
    # only a request body reaches here undecoded: the service's own text is decoded leniently
    return problem(400, "bad_request", f"the request body is not valid UTF-8: {exc.reason}")


def _store_unavailable(req: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    # a pool's timeout says which pool (its size and overflow); other messages may quote SQL
    detail = f" ({str(exc).partition(' (Background')[0]})" if isinstance(exc, PoolTimeout) else ""
    name = type(exc).__name__
    log.warning("the store cannot be reached on %s %s: %s%s", req.method, req.url.path, name, detail)
    return problem(
        STATUS_BY_CODE["store_unavailable"],
        "store_unavailable",
        "the database cannot be reached, or is too busy, right now; retry shortly",
        {"Retry-After": "1"},
        retryable=True,
    )


#: SQLSTATE classes of a store that cannot serve now but will: connection exceptions (08),
#: insufficient resources (53: "too many clients", out of memory or disk), operator
#: intervention (57: shutting down, starting up). The driver raises some of them as plain
#: ``DBAPIError``s (asyncpg's TooManyConnectionsError does).
_BUSY_SQLSTATE = ("08", "53", "57")


def _driver_error(req: Request[Any, Any, Any], exc: DBAPIError) -> Response[dict[str, Any]]:
    state = str(getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None) or "")
    if state.startswith(_BUSY_SQLSTATE):
        return _store_unavailable(req, exc)
    return _unexpected(req, exc)


def _unexpected(req: Request[Any, Any, Any], exc: Exception) -> Response[dict[str, Any]]:
    log.exception("unhandled error on %s %s", req.method, req.url.path, exc_info=exc)
    return problem(HTTP_500_INTERNAL_SERVER_ERROR, "internal_error", "internal server error")


exception_handlers: dict[Any, Any] = {
    SandlotError: _sandlot_error,
    ValidationException: _validation,
    HTTPException: _http,
    UnicodeDecodeError: _undecodable,
    # the driver's errors for a store that is down, restarting or dropped the connection, and
    # the bare OSError a refused connect raises before the driver wraps anything
    OperationalError: _store_unavailable,
    InterfaceError: _store_unavailable,
    ConnectionError: _store_unavailable,
    # every pooled connection stayed busy past the pool's timeout (the machine overloaded)
    PoolTimeout: _store_unavailable,
    # PostgreSQL out of connection slots or shutting down, raised without a narrower class
    DBAPIError: _driver_error,
    Exception: _unexpected,
}
