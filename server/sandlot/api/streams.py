"""Streamed calls: JSON arguments, then raw bytes, in one request body.

A command's stdin or a file's content can be as large as the file limit, far beyond what a
JSON body may hold (``max_request_bytes``), and is never held whole: the body of a streamed
call is its arguments as a JSON object (``args_bytes`` long, said in the query, at most
``max_arguments_bytes``), followed at once by the raw bytes, which flow on to the sandbox as
they arrive. The length is said up front, never found by a delimiter an argument could hold.
The whole body is bounded by the route (the file limit) while it streams; ``Content-Length``
is required, since the bytes' size is part of what a file write checks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, TypeVar

import msgspec
from litestar import Request
from litestar.params import Parameter
from pydantic import BaseModel, ValidationError

from sandlot.domain.errors import InvalidInput, PayloadTooLarge
from sandlot.features.base import Upload

__all__ = ["ArgsBytes", "split_body", "validated"]

M = TypeVar("M", bound=BaseModel)

ArgsBytes = Annotated[
    int,
    Parameter(
        ge=0,
        le=1 << 30,
        description="How many bytes at the start of the body are the JSON arguments; the rest "
        "is the streamed argument (stdin, a file's content).",
    ),
]


async def split_body(
    request: Request[Any, Any, Any], args_bytes: int, limit: int
) -> tuple[dict[str, Any], Upload]:
    """The call's arguments and its streamed part (``limit``: the most the arguments may be)."""
    if args_bytes > limit:
        raise PayloadTooLarge(
            f"the arguments may be at most {limit} bytes (max_arguments_bytes)", limit=limit
        )
    total = request.content_length
    if total is None:
        raise InvalidInput("a streamed call needs a Content-Length")
    if total < args_bytes:
        raise InvalidInput(f"the body ({total} bytes) is shorter than its args_bytes ({args_bytes})")
    chunks = aiter(request.stream())
    head = bytearray()
    while len(head) < args_bytes:
        try:
            head += await anext(chunks)
        except StopAsyncIteration:
            raise InvalidInput("the body ended within its arguments") from None
    try:
        args = msgspec.json.decode(bytes(head[:args_bytes]))
    except (msgspec.DecodeError, RecursionError) as exc:  # the latter: nested past the parser's depth
        raise InvalidInput(f"the arguments are not JSON (or nested too deep): {exc}") from None
    if not isinstance(args, dict):
        raise InvalidInput("the arguments must be a JSON object")
    return args, Upload(_rest(bytes(head[args_bytes:]), chunks), total - args_bytes)


async def _rest(first: bytes, chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if first:
        yield first
    async for chunk in chunks:
        if chunk:
            yield chunk


def validated(model: type[M], args: dict[str, Any]) -> M:
    """The arguments of a streamed call as ``model``; the first error is the client's 422."""
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "args"
        raise InvalidInput(f"{field}: {first['msg']}", field=field) from None
