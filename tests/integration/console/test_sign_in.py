"""The console's sign-in: an API key for a signed, HttpOnly, SameSite=Strict cookie; CSRF on
every state-changing request; a revoked key or a signed-out browser is refused; a tenant sees
only its own objects."""

from __future__ import annotations

import asyncio
import secrets

from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.services.accounts import AccountService
from sandlot.settings import Settings
from tests.integration.conftest import Headers, NewTenant, key_of
from tests.support.console import csrf, sign_in


async def test_signing_in_sets_a_strict_httponly_cookie_and_signing_out_refuses_the_pages(
    browser: AsyncTestClient, new_tenant: NewTenant
) -> None:
    assert (await browser.get("/console/", follow_redirects=False)).headers["location"] == "/console/login"
    fragment = await browser.get("/console/fragments/overview", headers={"HX-Request": "true"})
    assert fragment.status_code == 401 and fragment.headers["HX-Redirect"] == "/console/login"

    key = key_of(await new_tenant())
    form = await browser.get("/console/login")
    resp = await browser.post(
        "/console/login", data={"key": key, "_csrf_token": csrf(form.text)}, follow_redirects=False
    )
    cookie = next(c for c in resp.headers.get_list("set-cookie") if c.startswith("sandlot_console="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    assert "Path=/console" in cookie and key not in cookie
    page = await browser.get("/console/")
    assert page.status_code == 200 and "Overview" in page.text and "tenant" in page.text

    out = await browser.post("/console/logout", data={"_csrf_token": csrf(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    assert (await browser.get("/console/", follow_redirects=False)).status_code == 303


async def test_signing_out_ends_the_session_everywhere_and_both_are_audited(
    browser: AsyncTestClient, app_settings: Settings, new_tenant: NewTenant
) -> None:
    h = await new_tenant()
    await sign_in(browser, key_of(h))
    cookie = browser.cookies.get("sandlot_console")
    assert cookie
    page = await browser.get("/console/")
    out = await browser.post("/console/logout", data={"_csrf_token": csrf(page.text)}, follow_redirects=False)
    assert out.status_code == 303
    # a copy of the cookie (another browser, a stolen one) is signed out too (#27 finding 7:
    # it stayed good for its 12 hours)
    async with AsyncTestClient(create_app(app_settings), timeout=60) as other:
        other.cookies.set("sandlot_console", cookie)
        assert (await other.get("/console/", follow_redirects=False)).headers["location"] == "/console/login"
    for _ in range(100):
        trail = (await browser.get("/v1/audit", headers=h)).json()
        if len(trail) >= 2:
            break
        await asyncio.sleep(0.1)
    assert [(e["action"], e["outcome"]) for e in trail] == [
        ("POST /console/logout", "ok"),
        ("POST /console/login", "ok"),
    ]


async def test_failed_sign_ins_are_throttled_by_address(
    app_settings: Settings, new_tenant: NewTenant
) -> None:
    key = key_of(await new_tenant())
    strict = app_settings.model_copy(update={"console_sign_in_attempts": 3})
    async with AsyncTestClient(create_app(strict), timeout=60) as browser:
        form = await browser.get("/console/login")
        for _ in range(3):
            wrong = await browser.post(
                "/console/login", data={"key": "sl_0_x", "_csrf_token": csrf(form.text)}
            )
            assert wrong.status_code == 200 and 'role="alert"' in wrong.text
        # then even the right key waits: the address has spent its attempts
        held = await browser.post(
            "/console/login", data={"key": key, "_csrf_token": csrf(form.text)}, follow_redirects=False
        )
        assert (
            held.status_code == 429
            and "failed sign-ins" in held.text
            and held.headers["Retry-After"] == "300"
        )
        assert "sandlot_console=" not in held.headers.get("set-cookie", "")


async def test_a_wrong_key_is_refused_with_a_message(browser: AsyncTestClient) -> None:
    form = await browser.get("/console/login")
    for key in ("sl_00000000_nope", "not a key", "x" * 200):
        resp = await browser.post("/console/login", data={"key": key, "_csrf_token": csrf(form.text)})
        assert resp.status_code == 200 and 'role="alert"' in resp.text, key
        assert "sandlot_console=" not in resp.headers.get("set-cookie", "")
        assert "Traceback" not in resp.text
    assert (await browser.get("/console/", follow_redirects=False)).status_code == 303


async def test_state_changes_without_a_valid_csrf_token_are_refused(
    browser: AsyncTestClient, new_tenant: NewTenant
) -> None:
    key = key_of(await new_tenant())
    await browser.get("/console/login")
    for data in ({"key": key}, {"key": key, "_csrf_token": "forged"}):
        resp = await browser.post("/console/login", data=data, follow_redirects=False)
        assert resp.status_code == 403, resp.text
    await sign_in(browser, key)
    assert (await browser.post("/console/logout", follow_redirects=False)).status_code == 403
    assert (await browser.get("/console/")).status_code == 200  # still signed in
    # the JSON API is not cookie-authenticated and needs no CSRF token
    created = await browser.post(
        "/v1/environments",
        json={"name": f"c-{secrets.token_hex(3)}", "images": ["sandlot/busybox:latest"]},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert created.status_code == 201, created.text


async def test_a_revoked_key_ends_its_console_session(
    browser: AsyncTestClient, new_tenant: NewTenant, accounts: AccountService
) -> None:
    key = key_of(await new_tenant())
    await sign_in(browser, key)
    assert (await browser.get("/console/")).status_code == 200
    await accounts.revoke_key(key.split("_")[1])
    assert (await browser.get("/console/", follow_redirects=False)).headers["location"] == "/console/login"


async def test_a_tenant_sees_only_its_own_objects_and_an_operator_sees_all(
    browser: AsyncTestClient, client: AsyncTestClient, new_tenant: NewTenant, operator: Headers
) -> None:
    alice, bob = await new_tenant(), await new_tenant()
    names = {}
    for who, h in (("alice", alice), ("bob", bob)):
        names[who] = f"{who}-env-{secrets.token_hex(3)}"
        body = {"name": names[who], "images": ["sandlot/busybox:latest"], "pool_size": 0}
        assert (await client.post("/v1/environments", json=body, headers=h)).status_code == 201
    await sign_in(browser, key_of(alice))
    for path in ("/console/", "/console/fragments/overview"):
        page = (await browser.get(path)).text
        assert names["alice"] in page and names["bob"] not in page, path
    form = await browser.get("/console/")
    await browser.post("/console/logout", data={"_csrf_token": csrf(form.text)})
    await sign_in(browser, key_of(operator))
    page = (await browser.get("/console/")).text
    assert names["alice"] in page and names["bob"] in page and "operator" in page


async def test_every_console_answer_refuses_frames_and_sniffing(
    browser: AsyncTestClient, new_tenant: NewTenant
) -> None:
    """The sign-in page, a signed-in page, a fragment's refusal, a static file and the errors
    made outside the console's router (an unknown page, a wrong method, a post without its
    CSRF token) all carry the headers (#27 finding 7: none did; then the errors did not)."""
    answers = [await browser.get("/console/login"), await browser.get("/console/static/console.css")]
    await sign_in(browser, key_of(await new_tenant()))
    answers += [await browser.get("/console/"), await browser.get("/console/sandboxes/?status=nonsense")]
    errors = [
        await browser.get("/console/no-such-page"),
        await browser.delete("/console/login"),
        await browser.post("/console/logout"),
    ]
    assert [resp.status_code for resp in errors] == [404, 405, 403]
    answers += errors
    for resp in answers:
        assert resp.headers.get("content-security-policy") == "frame-ancestors 'none'", resp.url
        assert resp.headers.get("x-frame-options") == "DENY", resp.url
        assert resp.headers.get("x-content-type-options") == "nosniff", resp.url
