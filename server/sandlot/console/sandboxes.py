"""The console's sandboxes: a live, filtered table with kill and bulk kill (each confirmed)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any
from urllib.parse import urlencode

from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.params import FromPath, QueryParameter
from litestar.response import Template

from sandlot.api.deps import ServicesDep
from sandlot.console.auth import User
from sandlot.console.forms import reported
from sandlot.domain.errors import Conflict, NotFound
from sandlot.domain.status import SandboxStatus
from sandlot.services.accounts import Principal
from sandlot.services.sandboxes import SandboxQuery

__all__ = ["SandboxesController"]

PAGE = 50
STATUSES = [s.value for s in SandboxStatus]
#: Age filters: their label, and the bounds on creation time they mean (younger than / older than).
AGES: dict[str, tuple[str, timedelta | None, timedelta | None]] = {
    "5m": ("under 5 minutes", timedelta(minutes=5), None),
    "1h": ("under an hour", timedelta(hours=1), None),
    "1d": ("under a day", timedelta(days=1), None),
    "old": ("older than a day", None, timedelta(days=1)),
}
Text = Annotated[str | None, QueryParameter(max_length=300)]
Offset = Annotated[int, QueryParameter(ge=0, le=1_000_000)]
_ROWS = "console/_sandbox_rows.html"
_ID = re.compile(r"[A-Za-z0-9_-]{1,32}")


@dataclass(frozen=True, slots=True)
class Filters:
    status: str | None = None
    image: str | None = None
    tenant: str | None = None
    environment: str | None = None
    age: str | None = None
    offset: int = 0

    @classmethod
    def of(cls, get: Callable[[str], Any]) -> Filters:
        """From query parameters or form fields (``get`` looks one up; anything unknown means
        no filter)."""
        text = str(get("offset") or "0")
        ids = {k: str(get(k) or "") for k in ("tenant", "environment")}
        return cls(
            status=get("status") if get("status") in STATUSES else None,
            image=str(get("image"))[:300] if get("image") else None,
            offset=int(text) if text.isdigit() and len(text) < 8 else 0,
            age=get("age") if get("age") in AGES else None,
            **{k: v if _ID.fullmatch(v) else None for k, v in ids.items()},
        )

    def query(self) -> str:
        """The filters as a query string (for links and the live table's refresh)."""
        return self.paged(0)

    def paged(self, step: int) -> str:
        """The query string of the page ``step`` rows on (negative: back)."""
        pairs = {k: v for k, v in dataclasses.asdict(self).items() if v and k != "offset"}
        return urlencode({**pairs, "offset": max(self.offset + step, 0)})

    def bounds(self) -> tuple[datetime | None, datetime | None]:
        """The creation-time bounds (after, before) the age filter means."""
        if self.age is None:
            return None, None
        now = datetime.now(UTC)
        _, younger, older = AGES[self.age]
        return (now - younger if younger else None), (now - older if older else None)


async def _rows(services: ServicesDep, user: Principal, f: Filters) -> dict[str, Any]:
    after, before = f.bounds()
    query = SandboxQuery(
        statuses=[f.status] if f.status else None,
        image=f.image,
        tenant=f.tenant if user.is_operator else None,
        environment=f.environment,
        created_after=after,
        created_before=before,
        offset=f.offset,
        limit=PAGE + 1,
        by_last_event=True,
    )
    rows = list(await services.sandboxes.list(user, query))
    return {"rows": rows[:PAGE], "more": len(rows) > PAGE, "f": f, "user": user, "page_size": PAGE}


def _query_filters(
    status: Text = None,
    image: Text = None,
    tenant: Text = None,
    environment: Text = None,
    age: Text = None,
    offset: Offset = 0,
) -> Filters:
    given = {"status": status, "image": image, "tenant": tenant, "environment": environment, "age": age}
    return Filters.of({**given, "offset": offset}.get)


#: Annotation for a handler's ``f`` parameter: the filters of the query string.
QueryFilters = NamedDependency[Filters]


class SandboxesController(Controller):
    path = "/sandboxes"
    dependencies = {"f": Provide(_query_filters, sync_to_thread=False)}

    @get("/", name="console-sandboxes")
    async def page(self, services: ServicesDep, user: User, f: QueryFilters) -> Template:
        context = await _rows(services, user, f)
        tenants = await services.tenants.tenants(user) if user.is_operator else []
        environments = await services.environments.list(user)
        context.update(
            statuses=STATUSES, ages=AGES, tenants=tenants, environments=environments, page="sandboxes"
        )
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

    @get("/{sandbox_id:str}/usage")
    async def usage(self, sandbox_id: FromPath[str], services: ServicesDep, user: User) -> Template:
        """CPU and memory now (a fragment the detail page loads, then refreshes)."""
        context: dict[str, Any] = {"sandbox_id": sandbox_id}
        with reported() as done:  # gone meanwhile, or the engine is away: said, not a 500
            context["u"] = await services.sandboxes.usage(user, sandbox_id)
        return Template("console/_usage.html", context={**context, "error": done.error})

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
        filters = Filters.of(form.get)
        return Template(_ROWS, context=await _rows(services, user, filters))
