"""The console's pages and the htmx fragments that keep them live."""

from __future__ import annotations

from typing import Any

from litestar import Controller, get
from litestar.response import Template

from sandlot.api.deps import ServicesDep
from sandlot.console.auth import User

__all__ = ["OverviewController"]

#: How often live fragments refresh (seconds).
REFRESH = 2


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
