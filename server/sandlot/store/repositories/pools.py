"""Pool queries across tenants, and the claim of a warm sandbox into a session: one
statement on PostgreSQL (data-modifying CTEs), the same steps in a transaction elsewhere."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Integer, TextualSelect, Update, bindparam, column, func, literal_column, text, update
from sqlalchemy import select as core_select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from sandlot.domain.errors import Conflict
from sandlot.domain.status import SESSION_ACTIVE, SESSION_SUSPENDED, SandboxStatus, transition
from sandlot.store.repositories.sandboxes import ACTIVE
from sandlot.store.repositories.sessions import SessionRepository
from sandlot.store.repositories.usage import live_sessions
from sandlot.store.tables import (
    Sandbox,
    SandboxEvent,
    Session,
)
from sandlot.store.types import utcnow

__all__ = ["PoolRepository"]


class PoolRepository:
    """Pool queries across tenants (pool sandboxes carry their environment id)."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def counts(self, environment_id: str) -> dict[tuple[str, str], int]:
        """(image, status) -> number of live sandboxes of an environment. The live statuses are
        named (not "not offline"), so the status index finds the few live rows among every
        sandbox the environment ever had (a ``!=`` read them all: ~40 ms at 300,000 rows, in
        every housekeeping round and every start that met a full pool)."""
        return {
            (image, status): int(n)
            for image, status, n in await self.session.execute(_counts(), {"env": environment_id})
        }

    async def ready_by_environment(self) -> dict[tuple[str, str], int]:
        """(environment id, image) -> ready sandboxes, over every environment."""
        query = (
            select(col(Sandbox.environment_id), col(Sandbox.image), func.count())
            .where(col(Sandbox.environment_id).is_not(None))
            .where(col(Sandbox.status) == SandboxStatus.READY.value)
            .group_by(col(Sandbox.environment_id), col(Sandbox.image))
        )
        rows = (await self.session.execute(query)).all()
        return {(str(env), image): int(n) for env, image, n in rows}

    async def by_status(self) -> dict[str, int]:
        """Sandboxes per status, every tenant."""
        query = select(col(Sandbox.status), func.count()).group_by(col(Sandbox.status))
        return {status: int(n) for status, n in (await self.session.execute(query)).all()}

    async def claim_ready(
        self, environment_id: str, image: str, into: Session, reason: str
    ) -> Sandbox | None:
        """Atomically take one ready sandbox straight into ``in_session`` for the session
        ``into`` and insert that session; None (and no session row) when none is ready.

        The target comes from a subquery that locks the oldest ready row and skips rows others
        hold (PostgreSQL), guarded by a compare-and-set on the status (every database). Both
        transitions (ready -> acquired -> in_session) are checked by the status machine and
        recorded as events. On PostgreSQL it is one prebuilt statement (data-modifying CTEs),
        so an autocommit session makes it one round trip; elsewhere the caller's transaction
        holds the three writes together.
        """
        row, _ = await self._claim(environment_id, image, into, reason, within_quota=False)
        return row

    async def claim_within_quota(
        self, environment_id: str, image: str, into: Session, reason: str
    ) -> tuple[Sandbox | None, tuple[int, int]]:
        """:meth:`claim_ready`, only while the tenant's live sessions (active or suspended) are
        fewer than its session quota. Returns the sandbox (None: none ready, or the quota is
        reached) and (the quota, the live sessions) as counted before the claim: on
        PostgreSQL in the claim's own statement, elsewhere in the caller's transaction."""
        return await self._claim(environment_id, image, into, reason, within_quota=True)

    async def _claim(
        self, environment_id: str, image: str, into: Session, reason: str, *, within_quota: bool
    ) -> tuple[Sandbox | None, tuple[int, int]]:
        transition(SandboxStatus.READY, SandboxStatus.ACQUIRED)
        transition(SandboxStatus.ACQUIRED, SandboxStatus.IN_SESSION)
        postgres = self.session.get_bind().dialect.name == "postgresql"
        counted = (0, 0)
        for _ in range(5):
            params: dict[str, Any] = {
                "want_env": environment_id,
                "want_image": image,
                "claim_session": into.id,
                "reason": reason,
                "acquired_reason": f"acquired by session {into.id}",
                "now": utcnow(),
            }
            if postgres:
                row, counted = await self._claim_in_one_statement(into, params, within_quota)
            else:
                if within_quota:
                    counted = await live_sessions(self.session, into.tenant_id)
                    if counted[1] + 1 > counted[0]:
                        return None, counted
                row = await self._claim_in_transaction(into, params)
            if row is not None or (within_quota and counted[1] + 1 > counted[0]):
                return row, counted
            if not await self._any_ready(environment_id, image):
                return None, counted
            # lost a race for the row we saw; try the next one
        return None, counted

    async def _claim_in_transaction(self, into: Session, params: dict[str, Any]) -> Sandbox | None:
        claim = _claim_update().returning(*_SANDBOX_TABLE.c)
        found = (await self.session.execute(claim, params)).first()
        if found is None:
            return None
        row = Sandbox(**found._mapping)
        into.sandbox_id = row.id
        self.session.add_all(
            [
                SandboxEvent(
                    sandbox_id=row.id,
                    tenant_id=row.tenant_id,
                    from_status=a.value,
                    to_status=b.value,
                    reason=params[why],
                    at=params["now"],
                )
                for a, b, why in _CLAIM_EVENTS
            ]
        )
        await SessionRepository(self.session, None).add(into)
        return row

    async def _claim_in_one_statement(
        self, into: Session, params: dict[str, Any], within_quota: bool
    ) -> tuple[Sandbox | None, tuple[int, int]]:
        values = {f"s_{c.name}": getattr(into, c.name) for c in _SESSION_COLUMNS if c.name != "sandbox_id"}
        try:
            statement = _claim_statement(within_quota)
            found = (await self.session.execute(statement, {**params, **values})).first()
        except IntegrityError as exc:
            ref = into.client_ref or into.id
            raise Conflict(f"session {ref!r} exists", session_id=ref) from exc
        if found is None:  # no tenant row: nothing counted, nothing claimed
            return None, (0, 0)
        fields = found._mapping
        counted = (int(fields["quota_limit"]), int(fields["quota_live"])) if within_quota else (0, 0)
        if fields["id"] is None:
            return None, counted
        into.sandbox_id = fields["id"]
        return Sandbox(**{name: fields[name] for name in _SANDBOX_NAMES}), counted

    async def _any_ready(self, environment_id: str, image: str) -> bool:
        query = (
            select(col(Sandbox.id))
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.image) == image)
            .where(col(Sandbox.status) == SandboxStatus.READY.value)
            .limit(1)
        )
        return (await self.session.execute(query)).first() is not None

    async def idle_of_tenant(self, tenant_id: str) -> Sequence[Sandbox]:
        """The tenant's ready pool sandboxes, the longest idle first."""
        query = (
            select(Sandbox)
            .where(col(Sandbox.tenant_id) == tenant_id)
            .where(col(Sandbox.environment_id).is_not(None))
            .where(col(Sandbox.status) == SandboxStatus.READY.value)
            .order_by(col(Sandbox.updated_at))
        )
        return (await self.session.scalars(query)).all()

    async def frozen(self, environment_id: str, image: str) -> Sequence[tuple[str, str]]:
        """(sandbox id, session id) of the pool's sandboxes held by suspended sessions, the
        session idle the longest first."""
        query = (
            select(Sandbox.id, Session.id)
            .join(Session, col(Session.sandbox_id) == col(Sandbox.id))
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.image) == image)
            .where(col(Sandbox.status) == SandboxStatus.IN_SESSION.value)
            .where(col(Session.status) == SESSION_SUSPENDED)
            .order_by(col(Session.last_activity_at))
        )
        return [(str(box), str(sess)) for box, sess in (await self.session.execute(query)).all()]

    async def live(self, environment_id: str) -> Sequence[Sandbox]:
        query = (
            select(Sandbox)
            .where(col(Sandbox.environment_id) == environment_id)
            .where(col(Sandbox.status).in_(ACTIVE))
        )
        return (await self.session.scalars(query)).all()


@functools.cache
def _counts() -> Any:
    c = _SANDBOX_TABLE.c
    return (
        core_select(c.image, c.status, func.count())
        .where(c.environment_id == bindparam("env"))
        .where(c.status.in_([literal_column(f"'{status}'") for status in ACTIVE]))
        .group_by(c.image, c.status)
    )


_CLAIM_EVENTS = (
    (SandboxStatus.READY, SandboxStatus.ACQUIRED, "acquired_reason"),
    (SandboxStatus.ACQUIRED, SandboxStatus.IN_SESSION, "reason"),
)
_SESSION_COLUMNS = list(Session.__table__.c)  # type: ignore[attr-defined]
_SANDBOX_TABLE = Sandbox.__table__  # type: ignore[attr-defined]
_SANDBOX_NAMES = [c.name for c in _SANDBOX_TABLE.c]


def _claim_update() -> Update:
    """``UPDATE`` the oldest ready sandbox of (want_env, want_image) into the session: the row comes
    from a ``FOR UPDATE SKIP LOCKED`` subquery, and the status is compared again."""
    c = _SANDBOX_TABLE.c
    target = (
        core_select(c.id)
        .where(c.environment_id == bindparam("want_env"))
        .where(c.image == bindparam("want_image"))
        .where(c.status == SandboxStatus.READY.value)
        .order_by(c.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return (
        update(_SANDBOX_TABLE)
        .where(c.id == target)
        .where(c.status == SandboxStatus.READY.value)
        .values(
            status=SandboxStatus.IN_SESSION.value,
            status_reason=bindparam("reason"),
            session_id=bindparam("claim_session"),
            updated_at=bindparam("now"),
        )
    )


@functools.cache
def _claim_statement(within_quota: bool) -> TextualSelect:
    """The PostgreSQL claim as one statement, built once: the claiming ``UPDATE`` (the same
    as :func:`_claim_update`) and the inserts of both status events and of the session row,
    as data-modifying CTEs. ``within_quota``: the tenant's session quota and live sessions
    are counted first (columns ``quota_limit``, ``quota_live``: a row even when nothing was
    claimed), and the claim happens only below the quota."""
    ready, acquired, in_session = (
        SandboxStatus.READY.value,
        SandboxStatus.ACQUIRED.value,
        SandboxStatus.IN_SESSION.value,
    )
    box_columns = ", ".join(_SANDBOX_NAMES)
    session_names = [c.name for c in _SESSION_COLUMNS]
    session_values = ", ".join("id" if n == "sandbox_id" else f":s_{n}" for n in session_names)
    live = ", ".join(f"'{status}'" for status in (SESSION_ACTIVE, SESSION_SUSPENDED))
    quota = f"""quota AS (
  SELECT max_sessions AS quota_limit,
         (SELECT count(*) FROM sessions WHERE tenant_id = :s_tenant_id AND status IN ({live})) AS quota_live
    FROM tenants WHERE id = :s_tenant_id
), """
    guard = " AND EXISTS (SELECT 1 FROM quota WHERE quota_live < quota_limit)"
    sql = f"""
WITH {quota if within_quota else ""}claimed AS (
  UPDATE sandboxes
     SET status = '{in_session}', status_reason = :reason, session_id = :claim_session, updated_at = :now
   WHERE id = (SELECT id FROM sandboxes
                WHERE environment_id = :want_env AND image = :want_image AND status = '{ready}'
                ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
     AND status = '{ready}'{guard if within_quota else ""}
  RETURNING {box_columns}
), events AS (
  INSERT INTO sandbox_events (sandbox_id, tenant_id, from_status, to_status, reason, at)
  SELECT id, tenant_id, '{ready}', '{acquired}', :acquired_reason, :now FROM claimed
  UNION ALL
  SELECT id, tenant_id, '{acquired}', '{in_session}', :reason, :now FROM claimed
), new_session AS (
  INSERT INTO sessions ({", ".join(session_names)}) SELECT {session_values} FROM claimed
)
{_CLAIM_RESULT_COUNTED if within_quota else "SELECT * FROM claimed"}
"""
    binds = [bindparam(f"s_{c.name}", type_=c.type) for c in _SESSION_COLUMNS if c.name != "sandbox_id"]
    binds.append(bindparam("now", type_=_SANDBOX_TABLE.c.updated_at.type))
    counts = [column("quota_limit", Integer), column("quota_live", Integer)] if within_quota else []
    return text(sql).bindparams(*binds).columns(*_SANDBOX_TABLE.c, *counts)


# the claimed row (all NULL when none) and the counts, one row whenever the tenant exists
_CLAIM_RESULT_COUNTED = (
    "SELECT claimed.*, quota.quota_limit, quota.quota_live FROM quota LEFT JOIN claimed ON true"
)
