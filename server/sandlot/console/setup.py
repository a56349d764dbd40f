"""Where the console's templates and static files are, and the pieces ``create_app`` mounts:
its router (pages, fragments, static files), the template engine, the CSRF protection and the
hook that puts the console's security headers on every answer under its path."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from litestar import Router
from litestar.config.csrf import CSRFConfig
from litestar.datastructures import MutableScopeHeaders
from litestar.di import Provide
from litestar.plugins.jinja import JinjaTemplateEngine
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig
from litestar.types import Message, Scope

from sandlot.console.accounts import AccountsController
from sandlot.console.auth import SignInController, signed_in, to_sign_in
from sandlot.console.environments import EnvironmentsController
from sandlot.console.pages import AuditController, OverviewController
from sandlot.console.sandboxes import SandboxesController
from sandlot.console.sessions import SessionsController
from sandlot.domain.errors import NotAuthenticated
from sandlot.settings import Settings

__all__ = ["CONSOLE", "HEADERS", "ConsoleParts", "console_parts", "secure_console_answers", "web_dir"]

#: Where the console is mounted.
CONSOLE = "/console"
#: On every console answer: no page of it inside another site's frame (clickjacking a signed-in
#: operator's "Delete"), no content type guessed from a body, no console address sent elsewhere.
HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def web_dir() -> Path:
    """``web/`` of a checkout, or the copy an installed wheel carries (``sandlot/_web``)."""
    packaged = Path(__file__).resolve().parent.parent / "_web"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[3] / "web"


@dataclass(frozen=True, slots=True)
class ConsoleParts:
    router: Router
    templates: TemplateConfig
    csrf: CSRFConfig


def console_parts(settings: Settings) -> ConsoleParts:
    web = web_dir()
    router = Router(
        path=CONSOLE,
        route_handlers=[
            SignInController,
            OverviewController,
            AuditController,
            SandboxesController,
            AccountsController,
            EnvironmentsController,
            SessionsController,
            create_static_files_router(path="/static", directories=[web / "static"], name="console-static"),
        ],
        dependencies={"user": Provide(signed_in)},
        exception_handlers={NotAuthenticated: to_sign_in},
        include_in_schema=False,
    )
    csrf = CSRFConfig(
        secret=settings.console_secret or _node_secret(settings.data_dir),
        cookie_name="sandlot_csrf",
        cookie_path=CONSOLE,
        cookie_secure=settings.console_secure_cookie,
        cookie_samesite="strict",
    )
    templates = TemplateConfig(directory=web / "templates", engine=JinjaTemplateEngine)
    return ConsoleParts(router, templates, csrf)


async def secure_console_answers(message: Message, scope: Scope) -> None:
    """The app's ``before_send`` hook: every answer under :data:`CONSOLE` carries
    :data:`HEADERS`, its errors too (an unknown page's 404, a 405, a refused CSRF token's 403),
    which are made outside the console's router and so never got a router's headers."""
    if message["type"] != "http.response.start":
        return
    path = scope.get("path", "")
    if path == CONSOLE or path.startswith(CONSOLE + "/"):
        headers = MutableScopeHeaders.from_message(message)
        for name, value in HEADERS.items():
            headers[name] = value


def _node_secret(data_dir: Path) -> str:
    """A random secret kept in the data directory, made by the first process that needs it
    (the others read it: every worker of a node must sign CSRF tokens alike)."""
    path = data_dir / "console.secret"
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        for _ in range(300):  # another worker may be writing it right now
            text = path.read_text().strip()
            if text:
                return text
            time.sleep(0.01)
        raise
    with os.fdopen(fd, "w") as out:
        secret = secrets.token_urlsafe(32)
        out.write(secret)
    return secret
