"""The console's environments: list, create, change pool sizes and limits (taking effect without
a restart: the pool loop reads them on its next round), delete (which drains the pool)."""

from __future__ import annotations

import json
from typing import Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath
from litestar.response import Redirect, Template

from sandlot.api.deps import ServicesDep
from sandlot.api.schemas import EnvironmentCreate, EnvironmentUpdate
from sandlot.console.auth import User
from sandlot.console.forms import reported
from sandlot.domain.errors import InvalidInput
from sandlot.services.accounts import Principal

__all__ = ["EnvironmentsController"]

_NUMBERS = ("memory_mb", "cpus", "pids")


def _pool(form: Any) -> list[int]:
    low, high = str(form.get("pool_min") or "0"), str(form.get("pool_max") or "")
    return [int(low), int(high or low)] if low.isdigit() and (high or low).isdigit() else [-1, -1]


def _fields(form: Any) -> dict[str, Any]:
    """The form as the API's fields (the schema checks them)."""
    fields: dict[str, Any] = {k: form.get(k) for k in _NUMBERS if form.get(k)}
    images = [i.strip() for i in str(form.get("images") or "").replace("\n", ",").split(",") if i.strip()]
    if images:
        fields["images"] = images
    if form.get("pool_min") or form.get("pool_max"):
        fields["pool_size"] = _pool(form)
    features = str(form.get("features") or "").strip()
    if features:
        fields["features"] = _json_object(features)
    return fields


def _json_object(text: str) -> Any:
    """The features field: a JSON object (feature name -> its configuration, or null)."""
    try:
        value = json.loads(text[:65536])
    except ValueError as exc:
        raise InvalidInput(f"features: not JSON ({exc})", field="features") from None
    if not isinstance(value, dict):
        raise InvalidInput('features: a JSON object, such as {"shell": null}', field="features")
    return value


class EnvironmentsController(Controller):
    path = "/environments"

    async def _page(self, services: ServicesDep, user: Principal, error: str | None = None) -> Template:
        envs = await services.environments.list(user)
        context = {"user": user, "page": "environments", "envs": envs, "error": error}
        return Template("console/environments.html", context=context)

    @get("/", name="console-environments")
    async def page(self, services: ServicesDep, user: User) -> Template:
        return await self._page(services, user)

    @post("/", status_code=200)
    async def create(self, request: Request[Any, Any, Any], services: ServicesDep, user: User) -> Any:
        form = await request.form()
        with reported() as done:
            data = EnvironmentCreate.model_validate(
                {"name": form.get("name"), "pool_size": 0, **_fields(form)}
            )
            await services.environments.create(user, data.name, data.model_dump(exclude={"name"}))
        if done.error:
            return await self._page(services, user, done.error)
        return Redirect("/console/environments/", status_code=303)

    @post("/{name:str}", status_code=200)
    async def update(
        self, name: FromPath[str], request: Request[Any, Any, Any], services: ServicesDep, user: User
    ) -> Any:
        form = await request.form()
        with reported() as done:
            data = EnvironmentUpdate.model_validate(_fields(form))
            await services.environments.update(user, name, data.model_dump(exclude_unset=True))
        if done.error:
            return await self._page(services, user, done.error)
        return Redirect("/console/environments/", status_code=303)

    @post("/{name:str}/delete")
    async def delete(self, name: FromPath[str], services: ServicesDep, user: User) -> Redirect:
        env = await services.environments.delete(user, name)
        await services.pools.drain(env)
        return Redirect("/console/environments/", status_code=303)
