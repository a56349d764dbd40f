from __future__ import annotations

import base64

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
