"""The console in a real browser (Debian's Chromium, driven by Playwright) against a real
``sandlot serve`` on PostgreSQL and Docker: sign in with a key; make a tenant, a key for it and
an environment with a pool of 2; watch the pool fill to 2/2 on the overview without a reload;
kill a sandbox and watch its row change; bulk-kill three; type in a session's terminal and
see a file uploaded in its file browser; sign out and find the pages refused.
Every page is saved as a screenshot under ``artifacts/screenshots`` (the README shows the
overview)."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, ConsoleMessage, Page, async_playwright, expect

from sandlot.services.accounts import AccountService
from sandlot.store.engine import make_engine, make_sessionmaker
from tests.conftest import BUSYBOX, INSTANCE
from tests.integration.servers import Server

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"


@pytest.fixture(scope="module")
def console_server(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("console")
    settings = {
        "SANDLOT_DATABASE_URL": pg_url,
        "SANDLOT_RUNTIME": "docker",
        "SANDLOT_INSTANCE": f"{INSTANCE}-console",
        "SANDLOT_DATA_DIR": str(data_dir),
        "SANDLOT_BOOTSTRAP_OPERATOR_KEY": "false",
        "SANDLOT_POOL_INTERVAL": "0.3",
    }
    with Server(settings, data_dir / "server.log") as server:
        yield server.url


@pytest.fixture
async def operator_key(pg_url: str) -> AsyncIterator[str]:
    engine = make_engine(pg_url)
    try:
        accounts = AccountService(make_sessionmaker(engine))
        tenant = await accounts.create_tenant(f"ops-{secrets.token_hex(4)}")
        yield (await accounts.create_key(tenant.id, operator=True)).plaintext
    finally:
        await engine.dispose()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


async def _shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


#: Every control a keyboard can reach on the page (visible, enabled, in the tab order), each
#: described well enough to tell it apart, and those without an accessible name.
_CONTROLS = """() => {
  const describe = (e) => [e.tagName, e.id, e.name, e.getAttribute('href'), e.getAttribute('aria-label'),
                           e.getAttribute('hx-post'), e.getAttribute('hx-get'), e.value,
                           (e.innerText || '').trim().slice(0, 40)].join('|');
  const named = (e) => (e.innerText || '').trim() || e.getAttribute('aria-label') ||
                       (e.labels && e.labels.length) || e.title || e.getAttribute('placeholder');
  const all = [...document.querySelectorAll('a[href], button, input, select, textarea, [tabindex]')]
    .filter((e) => !e.disabled && e.tabIndex >= 0 && e.type !== 'hidden' &&
                   e.checkVisibility({visibilityProperty: true}));
  const unnamed = all.filter((e) => !named(e)).map((e) => e.outerHTML.slice(0, 160));
  return {controls: all.map(describe), unnamed: unnamed};
}"""
_FOCUSED = """() => {
  const e = document.activeElement;
  if (!e || e === document.body) return null;
  return {inTerminal: e.classList.contains('xterm-helper-textarea'),
          id: [e.tagName, e.id, e.name, e.getAttribute('href'), e.getAttribute('aria-label'),
               e.getAttribute('hx-post'), e.getAttribute('hx-get'), e.value,
               (e.innerText || '').trim().slice(0, 40)].join('|')};
}"""


async def _phone_and_keyboard(page: Page, name: str) -> None:
    """The page at phone width (no sideways scroll; saved as a screenshot), then by keyboard
    at desktop width: Tab reaches every control, in a loop back to the start, and each has a
    name a screen reader can say. The terminal keeps Tab for the shell: Esc then Tab leaves it."""
    await page.set_viewport_size({"width": 390, "height": 800})
    await _shot(page, f"{name}-phone")
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"{name} scrolls sideways at phone width ({width} px)"
    await page.set_viewport_size({"width": 1280, "height": 800})
    found = await page.evaluate(_CONTROLS)
    assert not found["unnamed"], f"controls without a name on {name}: {found['unnamed']}"
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    reached: set[str] = set()
    for _ in range(len(found["controls"]) * 2 + 10):
        focused = await page.evaluate(_FOCUSED)
        if focused and focused["inTerminal"]:
            await page.keyboard.press("Escape")
        await page.keyboard.press("Tab")
        focused = await page.evaluate(_FOCUSED)
        if focused:
            reached.add(focused["id"])
        if reached >= set(found["controls"]):
            break
    missed = set(found["controls"]) - reached
    assert not missed, f"Tab never reaches these controls on {name}: {sorted(missed)}"


@pytest.mark.timeout(300)
async def test_sign_in_watch_a_pool_fill_kill_sandboxes_and_sign_out(
    console_server: str, operator_key: str, browser: Browser, tmp_path: Path
) -> None:
    page = await browser.new_page(viewport={"width": 1280, "height": 800})
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    await page.goto(f"{console_server}/console/")
    await expect(page).to_have_url(f"{console_server}/console/login")
    await _shot(page, "sign-in")
    await page.get_by_label("API key").fill("sl_00000000_wrong")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("alert")).to_be_visible()
    await page.get_by_label("API key").fill(operator_key)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()

    # a tenant and a key for it, made in the console; the key works against the API
    tenant = f"browser-t-{secrets.token_hex(3)}"
    await page.get_by_role("link", name="Tenants and keys").click()
    await page.get_by_label("Name", exact=True).first.fill(tenant)
    await page.get_by_role("button", name="Create tenant").click()
    await expect(page.get_by_test_id(f"tenant-{tenant}")).to_be_visible()
    await page.get_by_label("Tenant").select_option(label=tenant)
    await page.locator("#k-name").fill("from the browser")
    await page.get_by_role("button", name="Create key").click()
    secret = (await page.get_by_test_id("new-secret").inner_text()).strip()
    await _shot(page, "keys")
    await _phone_and_keyboard(page, "keys")
    # the audit trail: the tenant and key made above in the console are there, newest first
    await page.get_by_role("link", name="Audit").click()
    await expect(page.get_by_role("heading", name="Audit trail")).to_be_visible()
    await expect(page.locator("table.rows")).to_contain_text("POST /console/keys")
    await _shot(page, "audit")
    await _phone_and_keyboard(page, "audit")
    async with httpx.AsyncClient(base_url=console_server, timeout=60) as anon:
        mine = await anon.get("/v1/keys", headers={"Authorization": f"Bearer {secret}"})
        assert mine.status_code == 200 and [k["name"] for k in mine.json()] == ["from the browser"]
    await page.get_by_role("link", name="Overview").click()

    # an environment with a warm pool of 2, made in the console; the overview (which polls its
    # fragment) shows the pool fill to 2/2 without a reload
    name = f"browser-{secrets.token_hex(3)}"
    auth = {"Authorization": f"Bearer {operator_key}"}
    await page.get_by_role("link", name="Environments").click()
    form = page.locator("form.env-form")
    await form.get_by_label("Name").fill(name)
    await form.get_by_label("Images").fill(BUSYBOX)
    await form.get_by_label("Warm pool min").fill("2")
    await form.get_by_label("max").fill("2")
    await form.get_by_role("button", name="Create environment").click()
    await expect(page.get_by_test_id(f"env-{name}")).to_be_visible()
    await _shot(page, "environments")
    await _phone_and_keyboard(page, "environments")
    await page.get_by_role("link", name="Overview").click()
    try:
        await expect(page.get_by_test_id(f"pool-{name}")).to_contain_text("2/2", timeout=120_000)
        await expect(page.get_by_test_id("check-runtime")).to_have_text("ok")
        await expect(page.locator("#charts canvas")).to_have_count(3)  # the last hour, drawn by uPlot
        await _shot(page, "overview")
        await _phone_and_keyboard(page, "overview")
    finally:
        async with httpx.AsyncClient(base_url=console_server, headers=auth, timeout=60) as api:
            await api.delete(f"/v1/environments/{name}")

    # sandboxes: kill one from its row, then three at once (each confirmed in a dialog)
    page.on("dialog", lambda dialog: asyncio.ensure_future(dialog.accept()))
    async with httpx.AsyncClient(base_url=console_server, headers=auth, timeout=60) as api:
        ids = [(await api.post("/v1/sandboxes", json={"image": BUSYBOX})).json()["id"] for _ in range(4)]
        try:
            await page.get_by_role("link", name="Sandboxes").click()
            await expect(page.get_by_role("heading", name="Sandboxes")).to_be_visible()
            for sid in ids:
                await expect(page.get_by_test_id(f"status-{sid}")).to_have_text("ready")
            await _shot(page, "sandboxes")
            await _phone_and_keyboard(page, "sandboxes")
            # a sandbox's page: its limits, status history, and CPU and memory now
            await page.get_by_role("link", name=ids[0]).click()
            await expect(page.get_by_test_id("usage-memory")).to_contain_text("of 512 MB", timeout=30_000)
            await _shot(page, "sandbox")
            await _phone_and_keyboard(page, "sandbox")
            await page.get_by_role("link", name="Sandboxes").first.click()
            await expect(page.get_by_test_id(f"status-{ids[0]}")).to_have_text("ready")
            await page.get_by_test_id(f"row-{ids[0]}").get_by_role("button", name="Kill").click()
            await expect(page.get_by_test_id(f"status-{ids[0]}")).to_have_text("offline", timeout=30_000)
            for sid in ids[1:]:
                await page.get_by_label(f"select {sid}").check()
            await page.get_by_role("button", name="Kill selected").click()
            for sid in ids[1:]:
                await expect(page.get_by_test_id(f"status-{sid}")).to_have_text("offline", timeout=30_000)
            statuses = {(await api.get(f"/v1/sandboxes/{sid}")).json()["status"] for sid in ids}
            assert statuses == {"offline"}
        finally:
            for sid in ids:
                await api.delete(f"/v1/sandboxes/{sid}")

    # a session's page: its live terminal, and a file uploaded there seen from the terminal
    async with httpx.AsyncClient(base_url=console_server, headers=auth, timeout=60) as api:
        env = f"browser-term-{secrets.token_hex(3)}"
        body = {"name": env, "images": [BUSYBOX], "pool_size": 0}
        assert (await api.post("/v1/environments", json=body)).status_code == 201
        sid = (await api.post("/v1/sessions", json={"environment": env})).json()["id"]
        try:
            # a checkpoint and a background process: controls after the terminal on its page
            assert (await api.post(f"/v1/sessions/{sid}/checkpoints")).status_code == 201
            started = await api.post(f"/v1/sessions/{sid}/processes", json={"command": "echo from-a-process"})
            assert started.status_code == 201, started.text
            await page.get_by_role("link", name="Sessions").click()
            await expect(page.get_by_test_id(f"session-{sid}")).to_be_visible()
            await _shot(page, "sessions")
            await _phone_and_keyboard(page, "sessions")
            await page.get_by_test_id(f"session-{sid}").get_by_role("link").click()
            await expect(page.get_by_role("status").filter(has_text="connected")).to_be_visible(
                timeout=30_000
            )
            await page.locator("#terminal").click()
            await page.keyboard.type("echo hello-from-browser")
            await page.keyboard.press("Enter")
            rows = page.locator("#terminal .xterm-rows")
            await expect(rows).to_contain_text("hello-from-browser", timeout=15_000)
            upload = tmp_path / "from-browser.txt"
            upload.write_text("uploaded through the console\n")
            await page.locator("#upload").set_input_files(str(upload))
            await page.get_by_role("button", name="Upload", exact=True).click()
            await expect(page.get_by_test_id("file-from-browser.txt")).to_be_visible()
            await page.locator("#terminal").click()
            await page.keyboard.type("cat from-browser.txt")
            await page.keyboard.press("Enter")
            await expect(rows).to_contain_text("uploaded through the console", timeout=15_000)
            await _shot(page, "session")
            await _phone_and_keyboard(page, "session")
        finally:
            await api.delete(f"/v1/sessions/{sid}")
            await api.delete(f"/v1/environments/{env}")

    # keyboard: the navigation is the first thing Tab reaches, and Enter follows it
    await page.get_by_role("link", name="Sandboxes").click()
    await page.evaluate("document.activeElement && document.activeElement.blur()")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Tab")
    focused = await page.evaluate("document.activeElement && document.activeElement.textContent")
    assert focused and focused.strip() == "Overview", focused
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Overview")).to_be_visible()

    await page.get_by_role("button", name="Sign out").click()
    await expect(page).to_have_url(f"{console_server}/console/login")
    await page.goto(f"{console_server}/console/")
    await expect(page).to_have_url(f"{console_server}/console/login")

    await page.set_viewport_size({"width": 390, "height": 800})  # phone width
    await _shot(page, "sign-in-phone")
    assert not errors, errors
