"""How one REST call is sent: the retry policy and the mapping of problem answers to exceptions.

Every call the SDK makes, a generated route's request or a raw request by path, goes through
:func:`send`, so the policy lives in one place and is spelled in tenacity's terms rather than as
a hand-written loop: retry what :func:`retryable` accepts, at most ``max_retries`` times, after
an exponential backoff with ±20 % jitter that a ``Retry-After`` header can only lengthen.
"""

from __future__ import annotations

import json
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

import httpx
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_exponential

from sandlot_client.errors import SandlotError, TransportError, from_problem

__all__ = ["Answer", "problem", "retryable", "send"]

_IDEMPOTENT = frozenset({"GET", "PUT", "DELETE", "HEAD"})
_LOST = (httpx.ReadError, httpx.RemoteProtocolError, httpx.WriteError)


class Answer(Protocol):
    """What both an ``httpx.Response`` and the generated layer's ``Response`` carry."""

    @property
    def status_code(self) -> int: ...

    @property
    def content(self) -> bytes: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


A = TypeVar("A", bound=Answer)


async def send(
    attempt: Callable[[], Awaitable[A]], *, max_retries: int, backoff: float, base_path: str = ""
) -> A:
    """Await ``attempt()`` until it answers below 400 or fails in a way not worth retrying.

    A problem answer raises its typed exception (:func:`problem`); a refused connection, or one
    lost during an idempotent request, raises :class:`TransportError` once retries run out; a
    connection lost during any other request raises at once, since it may have taken effect.
    Other transport failures (timeouts) propagate as httpx raised them.
    """
    retrying = AsyncRetrying(
        stop=stop_after_attempt(max_retries + 1),
        wait=_wait(backoff),
        retry=retry_if_exception(retryable),
        reraise=True,
    )
    try:
        return await retrying(_answered, attempt)
    except httpx.ConnectError as exc:
        raise TransportError(f"could not connect: {exc}") from exc
    except _LOST as exc:
        request = _request_of(exc)
        if request is not None and request.method in _IDEMPOTENT:
            raise TransportError(f"connection lost: {exc}") from exc
        target = _target(request, base_path)
        raise TransportError(f"connection lost during {target}: {exc}") from exc


def retryable(exc: BaseException) -> bool:
    """Refused connections, lost idempotent requests, and errors marked ``retryable``
    (``no_capacity``, ``runtime_unavailable``)."""
    if isinstance(exc, httpx.ConnectError):
        return True
    if isinstance(exc, _LOST):
        request = _request_of(exc)
        return request is not None and request.method in _IDEMPOTENT
    return isinstance(exc, SandlotError) and exc.retryable


def problem(answer: Answer) -> SandlotError:
    """The typed exception for an answer of 400 or more (its problem-details body, if any)."""
    try:
        body = json.loads(answer.content)
    except ValueError:
        body = {"detail": answer.content.decode("utf-8", "replace")[:500]}
    return from_problem(int(answer.status_code), body, answer.headers.get("retry-after"))


async def _answered(attempt: Callable[[], Awaitable[A]]) -> A:
    answer = await attempt()
    if answer.status_code >= 400:
        raise problem(answer)
    return answer


def _wait(backoff: float) -> Callable[[RetryCallState], float]:
    exponential = wait_exponential(multiplier=backoff)  # backoff * 2 ** (retry - 1)

    def wait(state: RetryCallState) -> float:
        delay = exponential(state) * (0.8 + 0.4 * random.random())
        error = state.outcome.exception() if state.outcome is not None else None
        retry_after: Any = error.body.get("retry_after_header") if isinstance(error, SandlotError) else None
        return max(delay, float(retry_after)) if retry_after else delay

    return wait


def _request_of(exc: httpx.RequestError) -> httpx.Request | None:
    try:
        return exc.request  # httpx's clients attach it to every error they raise
    except RuntimeError:
        return None


def _target(request: httpx.Request | None, base_path: str) -> str:
    if request is None:
        return "a request"
    path = request.url.raw_path.decode("ascii", "replace").removeprefix(base_path)
    return f"{request.method} {path}"
