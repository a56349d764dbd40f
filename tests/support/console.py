"""Signing a test browser in to the console, and the CSRF tokens its pages carry."""

from __future__ import annotations

import re

from litestar.testing import AsyncTestClient


def csrf(page: str) -> str:
    found = re.search(r'name="_csrf_token" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


async def sign_in(browser: AsyncTestClient, key: str) -> None:
    form = await browser.get("/console/login")
    assert form.status_code == 200 and "Sign in" in form.text
    resp = await browser.post(
        "/console/login", data={"key": key, "_csrf_token": csrf(form.text)}, follow_redirects=False
    )
    assert resp.status_code == 303 and resp.headers["location"] == "/console", resp.text


def page_token(page: str) -> str:
    found = re.search(r'"x-csrftoken": "([^"]+)"', page)
    assert found, page[:300]
    return found.group(1)
