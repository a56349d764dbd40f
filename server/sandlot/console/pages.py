"""The console's overview and the htmx fragments that keep it live, and the audit trail."""

from __future__ import annotations

import re
from typing import Annotated, Any

from litestar import Controller, get
from litestar.params import QueryParameter
from litestar.response import Template

from sandlot.api.deps import ServicesDep
from sandlot.console.auth import User

__all__ = ["AuditController", "OverviewController"]

#: How often live fragments refresh (seconds).
REFRESH = 2
#: Rows of the audit trail a page shows.
AUDIT_PAGE = 100
_ID = re.compile(r"[A-Za-z0-9_]{1,32}")
Text = Annotated[str | None, QueryParameter(max_length=100)]
Offset = Annotated[int, QueryParameter(ge=0, le=1_000_000)]


class OverviewController(Controller):
    path = ""

    @get("/", name="console-overview")
    async def overview(self, services: ServicesDep, user: User) -> Template:
        data = await services.overview.of(user)
        return Template(
            "console/overview.html",
            context={"o": data, "user": user, "refresh": REFRESH, "page": "overview"},
        )

    @get("/fragments/charts")
    async def charts(self, services: ServicesDep, user: User) -> dict[str, Any]:
        """The last hour, a point a minute (``services/charts.py``), for the overview's charts."""
        return await services.charts.last_hour(user)

    @get("/fragments/overview")
    async def overview_fragment(self, services: ServicesDep, user: User) -> Template:
        data = await services.overview.of(user)
        return Template("console/_overview.html", context={"o": data, "refresh": REFRESH})


class AuditController(Controller):
    path = "/audit"

    @get("/", name="console-audit")
    async def trail(
        self, services: ServicesDep, user: User, tenant: Text = None, offset: Offset = 0
    ) -> Template:
        """Who changed what, newest first: every tenant's for operators (or one, ``?tenant=``),
        a tenant's own otherwise."""
        wanted = tenant if tenant and _ID.fullmatch(tenant) else None
        rows = await services.audit.list(user, tenant=wanted, limit=AUDIT_PAGE + 1, offset=offset)
        context = {
            "user": user,
            "page": "audit",
            "rows": rows[:AUDIT_PAGE],
            "more": len(rows) > AUDIT_PAGE,
            "tenant": wanted,
            "offset": offset,
            "page_size": AUDIT_PAGE,
        }
        return Template("console/audit.html", context=context)
