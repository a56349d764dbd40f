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


async def test_revocation_in_the_same_process_clears_the_auth_cache(tmp_path) -> None:
    """A key revoked through the service that cached it fails at once, cache or not."""
    import asyncio

    from sandlot.services.accounts import AccountService
    from sandlot.store import migrate
    from sandlot.store.engine import make_engine, make_sessionmaker

    url = f"sqlite:///{tmp_path / 'k.db'}"
    await asyncio.to_thread(migrate.upgrade, url)
    engine = make_engine(url)
    try:
        accounts = AccountService(make_sessionmaker(engine), cache_seconds=60)
        tenant = await accounts.create_tenant("t")
        key = await accounts.create_key(tenant.id)
        header = f"Bearer {key.plaintext}"
        assert (await accounts.authenticate(header)).key_id == key.key.id
        await accounts.revoke_key(key.key.id)
        with pytest.raises(NotAuthenticated, match="revoked"):
            await accounts.authenticate(header)
    finally:
        await engine.dispose()
