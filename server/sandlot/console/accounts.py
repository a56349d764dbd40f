"""The console's tenants and keys: operators create tenants; every user creates, lists and
revokes keys as the API allows (a tenant key: its own tenant's, never more scopes than it has).
A new key's secret is shown once, on the page that created it."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath
from litestar.response import Redirect, Template

from sandlot.api.deps import ServicesDep
from sandlot.api.tenants import TenantCreate, TenantUpdate
from sandlot.console.auth import User
from sandlot.console.forms import reported
from sandlot.domain.keys import ALL_SCOPES
from sandlot.domain.quotas import QUOTAS
from sandlot.services.accounts import Principal

__all__ = ["AccountsController"]


class AccountsController(Controller):
    path = ""

    async def _page(self, services: ServicesDep, user: Principal, **extra: Any) -> Template:
        tenants = await services.tenants.tenants(user)
        context = {
            "user": user,
            "page": "keys",
            "tenants": tenants,
            "usage": await services.tenants.usage(user, tenants),
            "keys": await services.tenants.keys(user, None),
            "scopes": sorted(ALL_SCOPES if user.is_operator else user.scopes),
            "secret": None,
            "error": None,
            **extra,
        }
        return Template("console/keys.html", context=context)

    @get("/keys", name="console-keys")
    async def keys(self, services: ServicesDep, user: User) -> Template:
        return await self._page(services, user)

    @post("/tenants", status_code=200)
    async def create_tenant(self, request: Request[Any, Any, Any], services: ServicesDep, user: User) -> Any:
        form = await request.form()
        fields = {k: form.get(k) for k in ("name", *QUOTAS) if form.get(k)}
        with reported() as done:
            data = TenantCreate.model_validate({**fields, "allow_network": form.get("allow_network") == "on"})
            await services.tenants.create_tenant(user, **data.model_dump(exclude_unset=True))
        if done.error:
            return await self._page(services, user, error=done.error)
        return Redirect("/console/keys", status_code=303)

    @post("/tenants/{tenant_id:str}", status_code=200)
    async def update_tenant(
        self, tenant_id: FromPath[str], request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Any:
        """Change a tenant's quotas (operators; the API's rules and schema)."""
        form = await request.form()
        fields = {q: form.get(q) for q in QUOTAS if form.get(q) not in (None, "")}
        with reported() as done:
            data = TenantUpdate.model_validate(fields)
            await services.tenants.update_tenant(user, tenant_id, **data.model_dump(exclude_unset=True))
        if done.error:
            return await self._page(services, user, error=done.error)
        return Redirect("/console/keys", status_code=303)

    @post("/keys", status_code=200)
    async def create_key(
        self, request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Template:
        form = await request.form()
        scopes = [str(s) for s in form.getall("scopes")] if "scopes" in form else None
        tenant = str(form.get("tenant") or "") or None
        with reported() as done:
            created = await services.tenants.create_key(
                user, tenant=tenant, name=str(form.get("name") or "")[:100], scopes=scopes
            )
            return await self._page(services, user, secret=created.plaintext, made=created.key)
        return await self._page(services, user, error=done.error)

    @post("/keys/{key_id:str}/revoke")
    async def revoke(self, key_id: FromPath[str], services: ServicesDep, user: User) -> Redirect:
        await services.tenants.revoke_key(user, key_id)
        return Redirect("/console/keys", status_code=303)
