"""The console's sandboxes: a live, filtered table with kill and bulk kill (each confirmed)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter
from litestar.response import Template

from sandlot.api.deps import ServicesDep
from sandlot.console.auth import User
from sandlot.domain.errors import Conflict, NotFound
from sandlot.domain.status import SandboxStatus
from sandlot.services.accounts import Principal
from sandlot.services.sandboxes import SandboxQuery

__all__ = ["SandboxesController"]

PAGE = 50
STATUSES = [s.value for s in SandboxStatus]
Status = Annotated[str | None, QueryParameter(max_length=40)]
Image = Annotated[str | None, QueryParameter(max_length=300)]
Offset = Annotated[int, QueryParameter(ge=0, le=1_000_000)]
_ROWS = "console/_sandbox_rows.html"


@dataclass(frozen=True, slots=True)
class Filters:
    status: str | None = None
    image: str | None = None
    offset: int = 0

    @classmethod
    def of(cls, status: Any, image: Any, offset: Any) -> Filters:
        """From query parameters or form fields (anything unknown means no filter)."""
        text = str(offset or "0")
        return cls(
            status=status if status in STATUSES else None,
            image=str(image)[:300] if image else None,
            offset=int(text) if text.isdigit() and len(text) < 8 else 0,
        )


async def _rows(services: ServicesDep, user: Principal, f: Filters) -> dict[str, Any]:
    query = SandboxQuery(
        statuses=[f.status] if f.status else None,
        image=f.image,
        offset=f.offset,
        limit=PAGE + 1,
        by_last_event=True,
    )
    rows = list(await services.sandboxes.list(user, query))
    return {"rows": rows[:PAGE], "more": len(rows) > PAGE, "f": f, "user": user, "page_size": PAGE}


def _query_filters(status: Status = None, image: Image = None, offset: Offset = 0) -> Filters:
    return Filters.of(status, image, offset)


#: Annotation for a handler's ``f`` parameter: the filters of the query string.
QueryFilters = NamedDependency[Filters]


class SandboxesController(Controller):
    path = "/sandboxes"
    dependencies = {"f": Provide(_query_filters, sync_to_thread=False)}

    @get("/", name="console-sandboxes")
    async def page(self, services: ServicesDep, user: User, f: QueryFilters) -> Template:
        context = await _rows(services, user, f)
        context.update(statuses=STATUSES, page="sandboxes")
        return Template("console/sandboxes.html", context=context)

    @get("/rows")
    async def rows(self, services: ServicesDep, user: User, f: QueryFilters) -> Template:
        return Template(_ROWS, context=await _rows(services, user, f))

    @get("/{sandbox_id:str}", name="console-sandbox")
    async def detail(self, sandbox_id: FromPath[str], services: ServicesDep, user: User) -> Template:
        """A sandbox: its limits, time left, and every status change with its reason."""
        row = await services.sandboxes.get(user, sandbox_id)
        events = await services.sandboxes.events(user, row.id)
        left = (row.expires_at - datetime.now(UTC)).total_seconds() if row.expires_at else None
        context = {"user": user, "page": "sandboxes", "b": row, "events": events, "left": left}
        return Template("console/sandbox.html", context=context)

    @post("/{sandbox_id:str}/kill", status_code=200)
    async def kill(
        self, sandbox_id: FromPath[str], request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Template:
        await services.sandboxes.delete(user, sandbox_id)
        return await self._after(request, services, user)

    @post("/kill", status_code=200)
    async def kill_many(self, request: Request[Any, Any, Any], services: ServicesDep, user: User) -> Template:
        form = await request.form()
        for sandbox_id in form.getall("ids")[:PAGE]:
            try:
                await services.sandboxes.delete(user, str(sandbox_id))
            except NotFound:
                continue  # gone meanwhile, or never this tenant's: nothing to kill
        return await self._after(request, services, user)

    @post("/drain", status_code=200)
    async def drain_many(
        self, request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Template:
        """Take the selected idle pool sandboxes out of their pools (others are left alone)."""
        form = await request.form()
        for sandbox_id in form.getall("ids")[:PAGE]:
            try:
                await services.pools.drain_member(user, str(sandbox_id))
            except (NotFound, Conflict):
                continue  # not this tenant's, gone, or not an idle pool sandbox
        return await self._after(request, services, user)

    async def _after(self, request: Request[Any, Any, Any], services: ServicesDep, user: User) -> Template:
        """The rows again, with the filters the page shows (sent along as form fields)."""
        form = await request.form()
        filters = Filters.of(form.get("status"), form.get("image"), form.get("offset"))
        return Template(_ROWS, context=await _rows(services, user, filters))
