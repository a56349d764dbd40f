from __future__ import annotations

import pytest

from sandlot.domain.errors import InvalidInput
from sandlot.domain.pools import NO_POOL, PoolBounds, bounds_for, parse_pool_size, refill_count


def test_zero_means_no_pool_for_every_image() -> None:
    assert bounds_for(0, "anything") == NO_POOL
    assert not NO_POOL.pooled


def test_a_pair_applies_to_every_image() -> None:
    assert bounds_for([2, 5], "img:1") == PoolBounds(2, 5)
    assert bounds_for((0, 3), "other") == PoolBounds(0, 3)


def test_the_first_matching_regex_wins() -> None:
    size = {"py.*": [4, 8], "p.*": [1, 2], ".*": [0, 3]}
    assert bounds_for(size, "python:3") == PoolBounds(4, 8)
    assert bounds_for(size, "perl") == PoolBounds(1, 2)
    assert bounds_for(size, "busybox") == PoolBounds(0, 3)


def test_regexes_must_match_the_whole_image_name() -> None:
    assert bounds_for({"py": [1, 1]}, "python:3") == NO_POOL


@pytest.mark.parametrize(
    "bad", [-1, [1], [3, 1], [-1, 2], ["a", 2], {"(": [1, 1]}, {"x": [2, 1]}, "big", [True, 2]]
)
def test_bad_pool_sizes_are_refused_with_the_field_named(bad: object) -> None:
    with pytest.raises(InvalidInput) as info:
        parse_pool_size(bad)
    assert info.value.extra["field"] == "pool_size"


@pytest.mark.parametrize(
    ("bounds", "ready", "starting", "total", "expected"),
    [
        (PoolBounds(3, 5), 0, 0, 0, 3),
        (PoolBounds(3, 5), 1, 1, 2, 1),
        (PoolBounds(3, 5), 3, 0, 5, 0),
        (PoolBounds(3, 4), 0, 0, 3, 1),  # three in sessions: only one more fits under max
        (PoolBounds(2, 2), 0, 0, 2, 0),
        (NO_POOL, 0, 0, 0, 0),
    ],
)
def test_refill_tops_up_to_min_within_max(
    bounds: PoolBounds, ready: int, starting: int, total: int, expected: int
) -> None:
    assert refill_count(bounds, ready, starting, total) == expected
