"""The operator console: server-rendered pages (Jinja, htmx) under ``/console``.

Console controllers call the services directly, never the JSON API over HTTP, and never the
runtime or the store (a house-rules test reads their imports). Signing in trades an API key for
a signed, HttpOnly, SameSite=Strict cookie; every state-changing request carries a CSRF token.
"""

from sandlot.console.setup import ConsoleParts, console_parts, secure_console_answers

__all__ = ["ConsoleParts", "console_parts", "secure_console_answers"]
