"""Pool sizing: how many warm sandboxes each image keeps.

``pool_size`` is one of:

- ``0``: no pool. Sandboxes are created when a session starts and shut down when it ends.
- ``[min, max]``: every image keeps ``min`` ready sandboxes and never has more than ``max``.
- ``{image_regex: [min, max]}``: per image; the first regex that fully matches wins, and an
  image no regex matches gets no pool. Regexes are tenants' input: they run on RE2
  (:mod:`sandlot.domain.patterns`), in linear time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sandlot.domain.errors import InvalidInput
from sandlot.domain.patterns import compile_pattern

__all__ = ["NO_POOL", "PoolBounds", "bounds_for", "parse_pool_size", "refill_count"]


@dataclass(frozen=True, slots=True)
class PoolBounds:
    min: int
    max: int

    @property
    def pooled(self) -> bool:
        """False for "no pool": create on demand, shut down after the session."""
        return self.max > 0


NO_POOL = PoolBounds(0, 0)


def _pair(value: Any, where: str) -> PoolBounds:
    if value == 0:
        return NO_POOL
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise InvalidInput(f"{where} must be 0 or [min, max] integers", field="pool_size")
    low, high = value
    if low < 0 or high < low or high > 10_000:
        raise InvalidInput(f"{where} needs 0 <= min <= max <= 10000", field="pool_size")
    return PoolBounds(low, high)


def parse_pool_size(value: Any) -> list[tuple[str, PoolBounds]]:
    """Validate ``pool_size`` and return it as ordered (regex, bounds) rules."""
    if isinstance(value, dict):
        if len(value) > 64:
            raise InvalidInput("pool_size has at most 64 rules", field="pool_size")
        rules = []
        for pattern, pair in value.items():
            compile_pattern(pattern, "pool_size")
            rules.append((pattern, _pair(pair, f"pool_size[{pattern!r}]")))
        return rules
    return [(".*", _pair(value, "pool_size"))]


def bounds_for(pool_size: Any, image: str) -> PoolBounds:
    """The bounds that apply to ``image``: the first fully matching rule wins."""
    for pattern, bounds in parse_pool_size(pool_size):
        if compile_pattern(pattern, "pool_size").fullmatch(image):
            return bounds
    return NO_POOL


def refill_count(bounds: PoolBounds, ready: int, starting: int, total: int) -> int:
    """How many sandboxes to start now so ``ready + starting`` reaches ``min`` without the
    image's live total passing ``max``."""
    want = bounds.min - (ready + starting)
    room = bounds.max - total
    return max(0, min(want, room))
