"""Domain errors.

They know nothing of HTTP: `sandlot.api.errors` maps each ``code`` to a status. Leaf errors
also inherit the standard-library type they resemble so callers can catch them generically.
"""

from __future__ import annotations

__all__ = [
    "Busy",
    "Conflict",
    "DiskFull",
    "EnvironmentOutageError",
    "ImageNotFound",
    "InvalidInput",
    "NoCapacity",
    "NotAuthenticated",
    "NotFound",
    "NotPermitted",
    "PathOutsideWorkspace",
    "PayloadTooLarge",
    "QuotaExceeded",
    "RateLimited",
    "RuntimeUnavailable",
    "SandboxStateError",
    "SandlotError",
    "SessionEnded",
]


class SandlotError(Exception):
    """Base of every error the service reports to a client.

    Attributes:
        code: stable machine-readable identifier, part of the public API.
        retryable: whether a client may retry the same request later.
    """

    code = "internal_error"
    retryable = False

    def __init__(self, message: str, **extra: object) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra


class InvalidInput(SandlotError, ValueError):
    """The request is well-formed JSON but its values are not acceptable."""

    code = "invalid_input"


class PathOutsideWorkspace(InvalidInput):
    """A file path escapes the sandbox workspace (``..``, absolute elsewhere, symlink out)."""

    code = "path_outside_workspace"


class ImageNotFound(InvalidInput, LookupError):
    """The image named for a sandbox is not available on the runtime."""

    code = "image_not_found"


class NotFound(SandlotError, LookupError):
    """The object does not exist, or belongs to another tenant (never told apart)."""

    code = "not_found"


class Conflict(SandlotError):
    """The object is not in a state that allows the operation."""

    code = "conflict"


class SessionEnded(Conflict):
    """The session has ended: a call on it, or a command its end cut short (the answer then
    carries what the command had printed)."""

    code = "session_ended"


class Busy(Conflict, TimeoutError):
    """Another step holds what this one needs (a session's suspend, resume or checkpoint)
    for longer than this one waits: 409, and the client may try again."""

    retryable = True


class QuotaExceeded(SandlotError):
    """The tenant asked for more than its quota allows."""

    code = "quota_exceeded"


class PayloadTooLarge(SandlotError):
    """A request body or file is larger than the configured limit."""

    code = "payload_too_large"


class SlowBody(SandlotError, TimeoutError):
    """A request's body came slower than the service waits for (its connection is closed)."""

    code = "request_timeout"


class CutBody(SandlotError, EOFError):
    """A request's body ended before the length it announced: nothing of it is kept."""

    code = "incomplete_body"


class NotAuthenticated(SandlotError, PermissionError):
    """Missing, malformed, unknown or revoked API key."""

    code = "not_authenticated"


class NotPermitted(SandlotError, PermissionError):
    """The key is valid but lacks the scope for this operation."""

    code = "not_permitted"


class NoCapacity(SandlotError):
    """No sandbox can be placed right now; retry after ``retry_after`` seconds."""

    code = "no_capacity"
    retryable = True

    def __init__(self, message: str, retry_after: int = 1, **extra: object) -> None:
        super().__init__(message, **extra)
        self.retry_after = retry_after


class RateLimited(SandlotError):
    """The key made more requests than its rate allows; retry after ``retry_after`` seconds."""

    code = "rate_limited"
    retryable = True

    def __init__(self, message: str, retry_after: int = 1, allowance: object = None, **extra: object) -> None:
        super().__init__(message, **extra)
        self.retry_after = retry_after
        self.allowance = allowance


class DiskFull(SandlotError, OSError):
    """A disk is full: the sandbox's (its ``disk_mb``), or the service's blob storage (a
    snapshot or asset that does not fit is not kept). Either way the sandbox stays usable."""

    code = "disk_full"


class SandboxStateError(SandlotError, RuntimeError):
    """The sandbox is broken (container died, lost, unresponsive).

    The service shuts it down; a client may retry and will be served by a replacement.
    """

    code = "sandbox_state_error"
    retryable = True


class EnvironmentOutageError(SandlotError):
    """No healthy sandbox could be had for longer than the environment's grace period."""

    code = "environment_outage"
    retryable = True


class RuntimeUnavailable(SandlotError, ConnectionError):
    """The sandbox runtime (Docker engine, local runner) cannot be reached."""

    code = "runtime_unavailable"
    retryable = True
