"""Signing in and out of the console, and who is signed in.

Signing in trades an API key for a cookie holding a token signed with the key's stored digest
(the terminal tokens' scheme, audience ``console``): any process can check it, it expires, and
revoking the key ends the console session at once; signing out revokes the token itself (the
store records it), so a copy of the cookie is worth nothing after. Failed sign-ins are
throttled per client address and every sign-in and sign-out is in the audit trail
(``services/sign_ins.py``). The cookie is HttpOnly and SameSite=Strict,
scoped to the console's path.
"""

from __future__ import annotations

from typing import Annotated, Any

from litestar import Controller, Request, Response, get, post
from litestar.di import NamedDependency
from litestar.enums import RequestEncodingType
from litestar.params import Body
from litestar.response import Redirect, Template
from pydantic import BaseModel, Field

from sandlot.api.deps import ServicesDep, admit
from sandlot.domain.errors import NotAuthenticated, RateLimited
from sandlot.services.accounts import Principal

__all__ = ["AUDIENCE", "SESSION_COOKIE", "SignInController", "User", "signed_in", "to_sign_in"]

SESSION_COOKIE = "sandlot_console"
AUDIENCE = "console"
_PATH = "/console"


async def signed_in(request: Request[Any, Any, Any], services: ServicesDep) -> Principal:
    """The console user, from the session cookie; :class:`NotAuthenticated` sends them to sign
    in (see :func:`to_sign_in`)."""
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        raise NotAuthenticated("sign in first")
    return await admit(services, services.accounts.authenticate_token(token, AUDIENCE), request.scope)


def _client(request: Request[Any, Any, Any]) -> str:
    return str((request.scope.get("client") or ("",))[0])


def to_sign_in(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    """Unsigned (or expired, or revoked): a page goes to the sign-in form; an htmx fragment
    tells htmx to go there (a redirect would be swapped into the page)."""
    if request.headers.get("hx-request"):
        return Response(b"", status_code=401, headers={"HX-Redirect": f"{_PATH}/login"})
    return Redirect(f"{_PATH}/login", status_code=303)


#: Annotation for a console handler's ``user`` parameter: the signed-in principal.
User = NamedDependency[Principal]


class SignIn(BaseModel):
    key: Annotated[str, Field(min_length=1, max_length=200)]


class SignInController(Controller):
    path = ""

    @get("/login", name="console-login")
    async def form(self) -> Template:
        return Template("console/login.html", context={"error": None})

    @post("/login")
    async def sign_in(
        self,
        request: Request[Any, Any, Any],
        data: Annotated[SignIn, Body(media_type=RequestEncodingType.URL_ENCODED)],
        services: ServicesDep,
    ) -> Response[Any]:
        try:
            principal = await services.sign_ins.sign_in(data.key, _client(request))
        except NotAuthenticated as exc:
            # the form again with the reason (a 200: browsers log any 4xx page as an error)
            return Template("console/login.html", context={"error": exc.message})
        except RateLimited as exc:
            return Template(
                "console/login.html",
                context={"error": exc.message},
                status_code=429,
                headers={"Retry-After": str(exc.retry_after)},
            )
        hours = services.settings.console_session_hours
        token, _ = await services.accounts.issue_token(principal, AUDIENCE, ttl=int(hours * 3600))
        response: Response[Any] = Redirect(_PATH, status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            token,
            path=_PATH,
            max_age=int(hours * 3600),
            httponly=True,
            samesite="strict",
            secure=services.settings.console_secure_cookie,
        )
        return response

    @post("/logout")
    async def sign_out(self, request: Request[Any, Any, Any], services: ServicesDep) -> Response[Any]:
        """Ends the console session here and in every process (its token is revoked), not
        only in this browser."""
        token = request.cookies.get(SESSION_COOKIE)
        if token:
            try:
                principal = await services.accounts.authenticate_token(token, AUDIENCE)
            except NotAuthenticated:
                pass  # over already
            else:
                await services.accounts.revoke_token(token, AUDIENCE)
                services.sign_ins.signed_out(principal, _client(request))
        response: Response[Any] = Redirect(f"{_PATH}/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=_PATH)
        return response
