"""Commands run as another user of the sandbox: who may, and what it costs the sandbox.

A command may run as a user other than the image's when the service (``exec_users_allowed``)
and the sandbox's environment (``exec_users``) both list that user, the runtime can do it and
the sandbox is in a session (a sandbox without an environment, such as one made directly,
runs everything as its image's user). Such a user keeps no capability, but it may write where
the sandbox user cannot (as root: the image's own files) and start processes the sandbox user
cannot kill, so a reset could not prove a clean slate afterwards: before the command runs,
the sandbox is marked not ``reusable``, in its own committed transaction, and no other session
ever gets it (ending its session shuts it down, see ``PoolService.release``).
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from sandlot.domain.errors import Conflict, InvalidInput, NotFound
from sandlot.domain.status import SandboxStatus
from sandlot.domain.users import check_user_name, require_allowed_user
from sandlot.runtime.base import SandboxRuntime
from sandlot.settings import Settings
from sandlot.store.repositories import EnvironmentRepository, SandboxRepository
from sandlot.store.tables import Sandbox

__all__ = ["ExecUsers"]


class ExecUsers:
    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], runtime: SandboxRuntime, settings: Settings
    ) -> None:
        self._sessions = sessions
        self._runtime = runtime
        self._settings = settings

    async def allow(self, box: Sandbox, user: str, listed: Collection[str]) -> None:
        """Let a command in ``box`` run as ``user`` (``listed``: its environment's
        ``exec_users``), or refuse: 422 for a malformed name or a runtime that cannot, 403 for
        a user not allowed, 409 for a sandbox not in a session. Marks the sandbox for
        retirement before returning."""
        check_user_name(user)
        if not self._runtime.other_users:
            raise InvalidInput(
                f"the {self._runtime.name} runtime runs every command as the sandbox's own user; "
                "`user` needs the Docker runtime",
                field="user",
            )
        require_allowed_user(user, listed, self._settings.exec_users_allowed)
        async with self._sessions.begin() as session:
            row = await SandboxRepository(session, box.tenant_id).get(box.id, lock=True)
            if row.status != SandboxStatus.IN_SESSION.value:
                raise Conflict(
                    f"sandbox {box.id} is {row.status}: a command runs as another user only in a "
                    "session's sandbox",
                    status=row.status,
                )
            row.reusable = False

    async def allow_in(self, box: Sandbox, user: str | None) -> None:
        """:meth:`allow` for a command sent to the sandbox itself (``POST
        /v1/sandboxes/{id}/exec``), with its environment's list read now; nothing for None."""
        if user is None:
            return
        listed: list[str] = []
        if box.environment_id is not None:
            async with self._sessions() as session:
                try:
                    env = await EnvironmentRepository(session, box.tenant_id).get(box.environment_id)
                    listed = list(env.exec_users or [])
                except NotFound:  # deleted since: nothing is allowed any more
                    pass
        await self.allow(box, user, listed)
