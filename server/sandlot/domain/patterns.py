"""Regular expressions that tenants write (pool rules, features' image patterns).

They run on RE2, whose matching time grows linearly with the input whatever the pattern, so
no pattern can stall the event loop; what RE2 cannot express (backreferences, lookaround) is
refused when the pattern is given, as is a pattern too long or too large to compile.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

from sandlot.domain.errors import InvalidInput

__all__ = ["MAX_PATTERN", "TenantPattern", "compile_pattern"]

MAX_PATTERN = 1000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.max_mem = 1 << 20  # a pattern that needs more to compile is refused


class TenantPattern:
    """A compiled tenant pattern; :meth:`fullmatch` is linear-time."""

    __slots__ = ("_compiled", "_seen", "text")

    def __init__(self, text: str, compiled: Any) -> None:
        self.text = text
        self._compiled = compiled
        self._seen: dict[str, bool] = {}  # the last answers (a pattern meets few values)

    def fullmatch(self, value: str) -> bool:
        """Whether ``value`` matches as a whole. The answers for the last 256 values asked
        are kept: every activity call asks each feature's pattern about the session's image,
        and re2's wrapper cost 3.5% of a shell command's handling."""
        seen = self._seen.get(value)
        if seen is None:
            if len(self._seen) >= 256:
                self._seen.clear()
            seen = self._seen[value] = self._compiled.fullmatch(value) is not None
        return seen


@functools.lru_cache(maxsize=4096)
def _compile(text: str) -> TenantPattern:
    return TenantPattern(text, re2.compile(text, _OPTIONS))


def compile_pattern(text: str, field: str) -> TenantPattern:
    """``text`` compiled for linear-time matching; 422 naming ``field`` when refused."""
    if not isinstance(text, str) or len(text) > MAX_PATTERN or "\x00" in text:
        raise InvalidInput(f"{field}: a pattern is a string of at most {MAX_PATTERN} characters", field=field)
    try:
        return _compile(text)
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise InvalidInput(f"{field}: pattern {text!r} is not accepted: {detail}", field=field) from exc
