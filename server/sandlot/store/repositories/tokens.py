"""Tokens the service issued: recorded when signed, spent once (a terminal's), revoked (a
console sign-out), and checked against both."""

from __future__ import annotations

import time

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from sandlot.store.tables import IssuedToken

__all__ = ["TokenRepository"]

#: Rows stay this long past their expiry (a clock a little behind still finds them).
_KEPT_PAST_EXPIRY = 60.0


class TokenRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def add(self, token_id: str, key_id: str, audience: str, expires_at: float) -> None:
        """Record a token, and forget those long expired."""
        await self.session.execute(
            delete(IssuedToken).where(col(IssuedToken.expires_at) < time.time() - _KEPT_PAST_EXPIRY)
        )
        self.session.add(
            IssuedToken(id=token_id, key_id=key_id, audience=audience[:200], expires_at=expires_at)
        )
        await self.session.flush()

    async def spend(self, token_id: str, key_id: str) -> bool:
        """Mark a token used; False when it was used or revoked already (or is unknown). One
        statement: of two uses at once, one wins."""
        done = await self.session.execute(
            update(IssuedToken)
            .where(
                col(IssuedToken.id) == token_id,
                col(IssuedToken.key_id) == key_id,
                col(IssuedToken.used_at).is_(None),
                col(IssuedToken.revoked_at).is_(None),
            )
            .values(used_at=time.time())
        )
        return bool(done.rowcount)  # type: ignore[attr-defined]

    async def usable(self, token_id: str, key_id: str) -> bool:
        row = await self.session.get(IssuedToken, token_id)
        return row is not None and row.key_id == key_id and row.revoked_at is None

    async def revoke(self, token_id: str) -> None:
        await self.session.execute(
            update(IssuedToken).where(col(IssuedToken.id) == token_id).values(revoked_at=time.time())
        )
