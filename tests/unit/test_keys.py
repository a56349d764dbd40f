from __future__ import annotations

import pytest

from sandlot.domain.errors import NotAuthenticated
from sandlot.domain.keys import generate_key, hash_key, keys_match, split_key


def test_generated_key_round_trips_through_prefix_and_digest() -> None:
    key = generate_key()
    assert split_key(key.plaintext) == key.prefix
    assert keys_match(key.plaintext, key.digest)
    assert key.digest == hash_key(key.plaintext)
    assert key.plaintext not in key.digest


def test_two_keys_differ() -> None:
    assert generate_key().plaintext != generate_key().plaintext


def test_a_changed_key_does_not_match() -> None:
    key = generate_key()
    assert not keys_match(key.plaintext + "x", key.digest)


@pytest.mark.parametrize("bad", ["", "sl_", "abc", "sl_short_x", "xx_12345678_abc", "sl_12345678_"])
def test_malformed_keys_are_refused(bad: str) -> None:
    with pytest.raises(NotAuthenticated):
        split_key(bad)
