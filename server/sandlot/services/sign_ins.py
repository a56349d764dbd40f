"""The console's sign-in: an API key traded for a console session, with failed attempts
throttled by client address and every sign-in in the audit trail.

A key is a long random secret, so guessing one is hopeless; the throttle is there so that a
client cannot make the service check keys (a database read each) as fast as it can send them,
and so that a run of failures is seen in the log. Counted per API process: an address gets
``attempts`` failures, then waits ``window`` seconds with no failure before it may try again.
"""

from __future__ import annotations

import logging

from cachetools import TTLCache

from sandlot.domain.errors import NotAuthenticated, RateLimited
from sandlot.services.accounts import AccountService, Principal
from sandlot.services.audit import AuditEntry, AuditService

__all__ = ["SignIns"]

log = logging.getLogger(__name__)

_ADDRESSES_KEPT = 100_000


class SignIns:
    def __init__(
        self, accounts: AccountService, audit: AuditService, *, attempts: int, window: float
    ) -> None:
        self._accounts = accounts
        self._audit = audit
        self.attempts = attempts
        self.window = window
        self._failures: TTLCache[str, int] = TTLCache(_ADDRESSES_KEPT, window)

    async def sign_in(self, key: str, client: str) -> Principal:
        """The key's principal, the sign-in recorded; :class:`NotAuthenticated` for a bad key,
        :class:`RateLimited` for an address past its failed attempts (the key is not looked at)."""
        failed = self._failures.get(client, 0)
        if failed >= self.attempts:
            raise RateLimited(
                f"{failed} failed sign-ins from this address; try again in {self.window:g} s",
                retry_after=int(self.window),
            )
        try:
            principal = await self._accounts.authenticate(f"Bearer {key.strip()}")
        except NotAuthenticated:
            self._failures[client] = failed + 1  # and the window starts again
            log.warning("console sign-in refused from %s (%d in a row)", client, failed + 1)
            raise
        self._record(principal, client, "POST /console/login")
        return principal

    def signed_out(self, principal: Principal, client: str) -> None:
        self._record(principal, client, "POST /console/logout")

    def _record(self, principal: Principal, client: str, action: str) -> None:
        self._audit.record(
            AuditEntry(
                tenant_id=principal.tenant_id,
                key_id=principal.key_id,
                operator=principal.is_operator,
                action=action,
                target="",
                status=303,
                outcome="ok",
                client=client[:64],
            )
        )
