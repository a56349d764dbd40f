"""API key format, hashing and scopes.

A key looks like ``sl_<prefix>_<secret>``. The prefix is stored in clear to find the row; the
whole key is stored only as a SHA-256 digest. Keys carry 256 bits of randomness, so a fast hash
is the right tool (a slow KDF protects guessable passwords, not random tokens).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from enum import StrEnum

from sandlot.domain.errors import NotAuthenticated

__all__ = ["ALL_SCOPES", "NewKey", "Scope", "generate_key", "hash_key", "keys_match", "split_key"]

_PREFIX_LEN = 8


class Scope(StrEnum):
    """What a key may do."""

    OPERATOR = "operator"
    SANDBOXES_READ = "sandboxes:read"
    SANDBOXES_WRITE = "sandboxes:write"
    #: ``/metrics`` and nothing else: for a scraper, which needs no operator's powers. The
    #: figures are the whole service's, so only an operator can grant it.
    METRICS_READ = "metrics:read"


ALL_SCOPES: frozenset[str] = frozenset(s.value for s in Scope)
TENANT_SCOPES: tuple[str, ...] = (Scope.SANDBOXES_READ.value, Scope.SANDBOXES_WRITE.value)


@dataclass(frozen=True, slots=True)
class NewKey:
    """A freshly generated key: ``plaintext`` is shown once and never stored."""

    plaintext: str
    prefix: str
    digest: str


def hash_key(plaintext: str) -> str:
    """Digest stored for a key."""
    return hashlib.sha256(plaintext.encode()).hexdigest()


def generate_key() -> NewKey:
    """Make a new random key."""
    prefix = secrets.token_hex(_PREFIX_LEN // 2)
    plaintext = f"sl_{prefix}_{secrets.token_urlsafe(32)}"
    return NewKey(plaintext=plaintext, prefix=prefix, digest=hash_key(plaintext))


def split_key(plaintext: str) -> str:
    """Return the lookup prefix of a presented key, or raise :class:`NotAuthenticated`."""
    parts = plaintext.split("_", 2)
    if len(parts) != 3 or parts[0] != "sl" or len(parts[1]) != _PREFIX_LEN or not parts[2]:
        raise NotAuthenticated("malformed API key")
    return parts[1]


def keys_match(plaintext: str, digest: str) -> bool:
    """Constant-time comparison of a presented key against a stored digest."""
    return hmac.compare_digest(hash_key(plaintext), digest)
