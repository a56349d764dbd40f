"""``/v1/audit``: the trail of state changes keys made (operators: every tenant's, or
``?tenant=``; a tenant key: its own tenant's), newest first."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from litestar import Controller, get
from litestar.params import QueryParameter

from sandlot.api.deps import Limit, Offset, PrincipalDep, ServicesDep
from sandlot.api.problems import problems
from sandlot.api.schemas import Out

__all__ = ["AuditController", "AuditOut"]

_Id = Annotated[str | None, QueryParameter(max_length=32, pattern=r"^[A-Za-z0-9_]+$")]


class AuditOut(Out):
    """One state-changing request: who made it, what and on what, and how it ended."""

    id: int
    at: datetime
    tenant_id: str
    key_id: str
    operator: bool
    action: str
    target: str
    status: int
    outcome: str
    client: str


class AuditController(Controller):
    path = "/v1/audit"
    tags = ["audit"]

    @get("/", summary="List the audit trail (newest first)", responses=problems())
    async def list_events(
        self,
        services: ServicesDep,
        principal: PrincipalDep,
        tenant: _Id = None,
        key: _Id = None,
        limit: Limit = 100,
        offset: Offset = 0,
    ) -> list[AuditOut]:
        rows = await services.audit.list(principal, tenant=tenant, key_id=key, limit=limit, offset=offset)
        return [AuditOut.of(r) for r in rows]
