from __future__ import annotations

import base64

import pytest

from sandlot.api.errors import STATUS_BY_CODE
from sandlot.api.schemas import ExecOut
from sandlot.domain import errors
from sandlot.domain.status import IllegalTransition
from sandlot.runtime.base import ExecResult
from sandlot.runtime.output import CappedBuffer


def test_capped_buffer_keeps_the_head_and_counts_the_rest() -> None:
    buf = CappedBuffer(10)
    for _ in range(5):
        buf.write(b"abcd")
    assert buf.getvalue() == b"abcdabcdab"
    assert buf.dropped == 10
    assert buf.truncated


def test_capped_buffer_under_its_limit_is_not_truncated() -> None:
    buf = CappedBuffer(10)
    buf.write(b"0123456789")
    assert buf.getvalue() == b"0123456789"
    assert not buf.truncated


def test_every_domain_error_code_has_an_http_status() -> None:
    classes = [
        c for c in vars(errors).values()
        if isinstance(c, type) and issubclass(c, errors.SandlotError)
    ] + [IllegalTransition]  # fmt: skip
    for cls in classes:
        assert cls.code in STATUS_BY_CODE, cls


def test_leaf_errors_inherit_the_stdlib_type_they_resemble() -> None:
    assert issubclass(errors.NotFound, LookupError)
    assert issubclass(errors.InvalidInput, ValueError)
    assert issubclass(errors.NotAuthenticated, PermissionError)
    assert issubclass(errors.RuntimeUnavailable, ConnectionError)


def test_exec_output_is_text_when_utf8_and_base64_otherwise() -> None:
    text = ExecOut.from_result(ExecResult(0, "héllo\n".encode(), b"", 1.0))
    assert (text.encoding, text.stdout) == ("utf-8", "héllo\n")
    raw = b"\xff\x00\xfe"
    binary = ExecOut.from_result(ExecResult(0, raw, b"err", 1.0))
    assert binary.encoding == "base64"
    assert base64.b64decode(binary.stdout) == raw
    assert base64.b64decode(binary.stderr) == b"err"


def test_a_store_too_busy_to_lend_a_connection_is_a_503_not_a_500(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pooled connection busy past the pool's timeout (seen at 200 agents on 2 cores) is
    503 ``store_unavailable`` with Retry-After, like a store that is down; the log says which
    pool (its size and overflow)."""
    from litestar import Litestar, get
    from litestar.testing import TestClient
    from sqlalchemy.exc import TimeoutError as PoolTimeout

    from sandlot.api import errors as api_errors
    from sandlot.api.errors import exception_handlers

    said: list[str] = []  # the app's logging set-up leaves the records out of caplog's reach
    monkeypatch.setattr(api_errors.log, "warning", lambda fmt, *args: said.append(fmt % args))

    @get("/busy", sync_to_thread=False)
    def busy() -> None:
        raise PoolTimeout("QueuePool limit of size 10 overflow 20 reached")

    with TestClient(Litestar([busy], exception_handlers=exception_handlers)) as client:
        answer = client.get("/busy")
    assert answer.status_code == 503 and answer.json()["code"] == "store_unavailable"
    assert answer.headers["Retry-After"] == "1" and answer.json()["retryable"] is True
    assert "(QueuePool limit of size 10 overflow 20 reached)" in said[0]
