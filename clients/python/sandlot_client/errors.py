"""Typed exceptions mirroring the service's error codes (``application/problem+json``)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ClientClosed",
    "Conflict",
    "EnvironmentOutage",
    "InvalidInput",
    "NoCapacity",
    "NotAuthenticated",
    "NotFound",
    "NotPermitted",
    "PayloadTooLarge",
    "QuotaExceeded",
    "RuntimeUnavailable",
    "SandboxStateError",
    "SandlotError",
    "SessionEnded",
    "TransportError",
    "from_problem",
]


class SandlotError(Exception):
    """An error the service reported (or, for :class:`TransportError`, could not report)."""

    retryable = False

    def __init__(
        self, message: str, *, code: str = "error", status: int = 0, body: dict[str, Any] | None = None
    ):
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.body = body or {}

    @property
    def reason(self) -> str | None:
        """What a refused file operation met (``not_found``, ``is_a_directory``,
        ``permission_denied``...), where the service says."""
        found = self.body.get("reason")
        return found if isinstance(found, str) else None


class InvalidInput(SandlotError):
    """422: a field is wrong (``body["field"]`` names it where the service knows)."""


class NotAuthenticated(SandlotError):
    """401: missing, unknown or revoked key."""


class NotPermitted(SandlotError):
    """403: the key lacks a scope."""


class NotFound(SandlotError):
    """404: no such object (or another tenant's)."""


class Conflict(SandlotError):
    """409: not in a usable state (e.g. a suspended session), or another command is running."""


class SessionEnded(Conflict):
    """409: the session has ended, before the call or while its command ran (the end cut the
    command short: ``exit_code``, ``stdout`` and ``stderr`` say what it had done)."""

    @property
    def exit_code(self) -> int | None:
        found = self.body.get("exit_code")
        return found if isinstance(found, int) else None

    @property
    def encoding(self) -> str:
        """How ``stdout`` and ``stderr`` are given: ``utf-8``, or ``base64`` for binary output."""
        return str(self.body.get("encoding") or "utf-8")

    @property
    def stdout(self) -> str:
        return str(self.body.get("stdout") or "")

    @property
    def stderr(self) -> str:
        return str(self.body.get("stderr") or "")


class PayloadTooLarge(SandlotError):
    """413: a body (a file, a stdin, the arguments) over the service's limit; nothing was
    done, and the session and its sandbox are as they were."""


class QuotaExceeded(SandlotError):
    """429: the tenant's quota."""


class SandboxStateError(SandlotError):
    """502: the sandbox broke; it was shut down; a new session gets a healthy one."""


class RuntimeUnavailable(SandlotError):
    """503: the service cannot reach its sandbox runtime."""

    retryable = True


class NoCapacity(SandlotError):
    """503: the pool is full; retried after ``retry_after`` seconds by the client."""

    retryable = True

    @property
    def retry_after(self) -> float:
        return float(self.body.get("retry_after_header") or 1.0)


class EnvironmentOutage(SandlotError):
    """503: no healthy sandbox for longer than the environment's grace period."""


class TransportError(SandlotError):
    """The request did not get an answer (connection refused or reset)."""

    retryable = True


class ClientClosed(SandlotError):
    """The client was closed (by another thread, say) before or while this call was made: the
    call was not sent, or its answer will never be read."""


_BY_CODE: dict[str, type[SandlotError]] = {
    "validation_error": InvalidInput,
    "invalid_input": InvalidInput,
    "path_outside_workspace": InvalidInput,
    "image_not_found": InvalidInput,
    "bad_request": InvalidInput,
    "incomplete_body": InvalidInput,
    "request_timeout": TransportError,  # the body came too slowly: the connection was closed
    "not_authenticated": NotAuthenticated,
    "not_permitted": NotPermitted,
    "not_found": NotFound,
    "conflict": Conflict,
    "session_ended": SessionEnded,
    "illegal_transition": Conflict,
    "payload_too_large": PayloadTooLarge,
    "quota_exceeded": QuotaExceeded,
    "sandbox_state_error": SandboxStateError,
    "runtime_unavailable": RuntimeUnavailable,
    "no_capacity": NoCapacity,
    "environment_outage": EnvironmentOutage,
}


def from_problem(status: int, body: dict[str, Any], retry_after: str | None = None) -> SandlotError:
    code = str(body.get("code") or "error")
    cls = _BY_CODE.get(code, SandlotError)
    if retry_after is not None:
        body = {**body, "retry_after_header": retry_after}
    return cls(str(body.get("detail") or code), code=code, status=status, body=body)
