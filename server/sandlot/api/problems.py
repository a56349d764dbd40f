"""What the OpenAPI document says about error answers: every route lists the problem-details
statuses it can answer (``responses=problems(...)``), so a client generated from the document,
or a fuzzer checking answers against it, knows them. The statuses come from the one table in
``api/errors.py``; this module only documents them."""

from __future__ import annotations

from litestar.openapi.datastructures import ResponseSpec
from pydantic import BaseModel, ConfigDict

__all__ = ["AUTHENTICATED", "Problem", "problems"]


class Problem(BaseModel):
    """An error answer (RFC 9457 problem details, ``application/problem+json``). ``code`` is
    stable; some codes add fields (``errors`` for a validation error, the resource concerned)."""

    model_config = ConfigDict(extra="allow")

    type: str
    title: str
    status: int
    code: str
    detail: str
    retryable: bool = False


_WHY: dict[int, str] = {
    400: "The request is malformed (a body that is not JSON or not UTF-8, a NUL byte).",
    401: "No API key, or not a valid one.",
    403: "The key lacks the scope, or the resource is an operator's.",
    404: "No such resource for this caller.",
    409: "The resource is not in a state that allows this (or the name is taken).",
    413: "The request body is larger than allowed.",
    422: "The input breaks the schema or the service's rules.",
    429: "A quota or the key's rate limit is reached (see Retry-After).",
    502: "The sandbox was lost while serving the request (it has been shut down).",
    503: "No capacity, or the runtime or environment is unavailable (retryable).",
    507: "The sandbox's disk is full.",
}

#: What any route behind an API key can answer.
AUTHENTICATED = (400, 401, 403, 422, 429)


def problems(*statuses: int, base: tuple[int, ...] = AUTHENTICATED) -> dict[int, ResponseSpec]:
    """The problem answers of a route: ``base`` and ``statuses``, each described."""
    return {
        status: ResponseSpec(
            data_container=Problem,
            description=_WHY[status],
            media_type="application/problem+json",
            generate_examples=False,
        )
        for status in sorted({*base, *statuses})
    }
