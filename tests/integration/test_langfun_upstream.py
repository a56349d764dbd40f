"""langfun's own environment suite (the ``*_test.py`` modules shipped in ``langfun.env``) run
through the Sandlot adapter against a live server: every sandbox those tests make is a Sandlot
session on real Docker.

The suite drives its sandboxes through two test doubles, ``test_utils.TestingSandboxService``
and ``TestingSandbox``, whose only extras over a real service are fault switches (a start,
shutdown or ping that fails as asked) and a ``shell`` that records its code. Here both are
replaced by subclasses of the adapter's classes with the same switches: a start opens a real
session (from a warm pool), a ping runs in it, a shutdown ends it, and each ``shell`` call runs
in the session's persistent shell and must echo its code back before it answers as the double
would. The suite's own assertions (event logs, status transitions, pools, error handling) then
hold or fail on the adapter's real behaviour. Modules that never touch a sandbox (features
without one, load balancers) are langfun's alone and not run here."""

from __future__ import annotations

import asyncio
import secrets
import shlex
import threading
import time
import unittest
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pyglove as pg
import pytest
from langfun.env import base_sandbox_service_test, base_sandbox_test, interface, interface_test, test_utils

from sandlot.services.accounts import AccountService
from sandlot_client import Sandlot
from sandlot_client.langfun_env import SandlotSandbox, SandlotSandboxService

pytestmark = [pytest.mark.docker, pytest.mark.postgres, pytest.mark.timeout(120)]

IMAGE = "sandlot/busybox:latest"
MODULES = (base_sandbox_test, base_sandbox_service_test, interface_test)
# where the doubles reach the live server: set by the ``upstream`` fixture, read at construction
TARGET: dict[str, str] = {}
STATE_ERRORS: list[str] = []  # every state error a sandbox reported in the running case
Fault = type[BaseException] | None


class SandlotTestingService(SandlotSandboxService):
    """``TestingSandboxService`` on Sandlot: the suite's defaults and fault switches."""

    image_ids = ["test_image"]
    housekeep_interval = 3600.0
    simulate_start_error: Fault = None
    simulate_shutdown_error: Fault = None
    simulate_ping_error: Fault = None
    offline: bool = False
    base_url = ""
    sandlot_environment = ""
    __test__ = False

    @pg.explicit_method_override
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["base_url"] = kwargs.get("base_url") or TARGET["url"]
        kwargs["sandlot_environment"] = kwargs.get("sandlot_environment") or TARGET["environment"]
        super().__init__(*args, api_key=TARGET["key"], **kwargs)

    def _on_bound(self) -> None:
        super()._on_bound()
        self._cycled = threading.Event()

    def _housekeep_cycle(self) -> tuple[bool, dict[str, Any]]:
        try:
            return super()._housekeep_cycle()  # type: ignore[no-any-return]
        finally:
            self._cycled.set()

    def wait_for_housekeeping(self) -> None:
        self._cycled.wait(timeout=5.0)
        self._cycled.clear()

    def _create_sandbox(
        self,
        image_id: str,
        sandbox_id: str,
        reusable: bool,
        proactive_session_setup: bool,
        keepalive_interval: float | None,
    ) -> SandlotTestingSandbox:
        fields = self._sandbox_fields(
            image_id, sandbox_id, reusable, proactive_session_setup, keepalive_interval
        )
        return SandlotTestingSandbox(
            **fields,
            simulate_start_error=self.simulate_start_error,
            simulate_shutdown_error=self.simulate_shutdown_error,
            simulate_ping_error=self.simulate_ping_error,
        )


class SandlotTestingSandbox(SandlotSandbox):
    """``TestingSandbox`` on a Sandlot session: the suite's image names all run the busybox
    image; a simulated fault fires where the double's does, after the real work it stands for
    is undone (a failing shutdown still ends its session, so no container is left behind)."""

    simulate_start_error: Fault = None
    simulate_shutdown_error: Fault = None
    simulate_ping_error: Fault = None
    __test__ = False

    def _on_bound(self) -> None:
        super()._on_bound()
        self._shell_history: list[str] = []
        self._ping_history: list[bool] = []

    def report_state_error(self, e: interface.SandboxStateError) -> None:
        STATE_ERRORS.append(f"{self.id} ({self.status.value}): {e!r}")  # said when a case fails
        super().report_state_error(e)

    def _raise_error(self, message: str, error_type: type[BaseException], **kwargs: Any) -> None:
        if issubclass(error_type, interface.SandboxStateError):
            raise error_type(message, sandbox=self, **kwargs)
        raise error_type(message)

    # The double's two waits wait out what its instant work never shows: a real shutdown
    # (the session's end) and a real session exit (its features' teardown calls) take time,
    # and both always run on to their end state

    def wait_until_not(self, status: Any) -> None:
        statuses = status if isinstance(status, tuple) else (status,)
        while self.status in statuses or self.status == self.Status.SHUTTING_DOWN:
            time.sleep(0.01)

    def wait_until_next_housekeep(self) -> None:
        seen = self.housekeep_counter
        while self.housekeep_counter == seen or self.status == self.Status.EXITING_SESSION:
            time.sleep(0.01)

    @property
    def sandlot_image(self) -> str:
        return IMAGE

    def _start(self) -> None:
        if self.simulate_start_error:
            self._raise_error("Sandbox start error", self.simulate_start_error)
        super()._start()

    def _shutdown(self) -> None:
        super()._shutdown()
        if self.simulate_shutdown_error:
            self._raise_error("Sandbox shutdown error", self.simulate_shutdown_error)

    @interface.treat_as_sandbox_state_error(errors=(RuntimeError,))
    @interface.log_activity()
    def shell(self, code: str, raise_error: Fault = None) -> str:  # type: ignore[override]
        self._shell_history.append(code)
        with self._turn, self._guard("shell"):
            out = self.session.shell.run(f"printf %s {shlex.quote(code)}", timeout=30)
        assert (out["exit_code"], out["stdout"]) == (0, code), out
        if raise_error is not None:
            self._raise_error(f'shell "{code}" failed', raise_error)
        return f'shell "{code}" succeeded'

    def _ping(self) -> None:
        super()._ping()  # a real ping; the switch is read as it answers (the double's takes no time)
        self._ping_history.append(not self.simulate_ping_error)
        if self.simulate_ping_error:
            self._raise_error("Ping error", self.simulate_ping_error, code="ping")


def upstream_cases() -> list[str]:
    """Ids of the suite's tests that make a sandbox service, module by module."""
    loader = unittest.TestLoader()
    return [case.id() for module in MODULES for case in iter_cases(loader.loadTestsFromModule(module))]


def iter_cases(suite: unittest.TestSuite) -> Iterator[unittest.TestCase]:
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from iter_cases(item)
        else:
            yield item


@pytest.fixture(scope="module")
async def upstream(live_server: str, accounts: AccountService) -> AsyncIterator[str]:
    """The doubles swapped for the adapter's subclasses, aimed at a tenant of this module with
    an environment whose pool keeps two sandboxes warm; yields the tenant's key."""
    tenant = await accounts.create_tenant(f"lfu-{secrets.token_hex(4)}")
    key = (await accounts.create_key(tenant.id)).plaintext
    environment = f"lfu-{secrets.token_hex(3)}"
    with Sandlot(live_server, key) as admin:
        admin.create_environment(environment, [IMAGE], pool_size=[2, 6])
    TARGET.update(url=live_server, key=key, environment=environment)
    swaps = [(test_utils, "TestingSandboxService", SandlotTestingService)]
    swaps += [(test_utils, "TestingSandbox", SandlotTestingSandbox)]
    for module in (base_sandbox_test, base_sandbox_service_test):
        swaps += [(module, "TestingSandboxService", SandlotTestingService)]
        swaps += [(module, "TestingSandbox", SandlotTestingSandbox)]
    with pytest.MonkeyPatch.context() as patch:
        for module, name, value in swaps:
            patch.setattr(module, name, value)
        yield key


# a case that acquires a sandbox and never releases it nor shuts its service down: its
# Sandlot session stays open, as it would in a program doing the same, and is ended here
LEAVES_ITS_SANDBOX = {"langfun.env.interface_test.InterfaceTests.test_abstract_environment_sandbox_session"}


@pytest.mark.parametrize("case_id", [pytest.param(case, id=case) for case in upstream_cases()])
async def test_langfun_upstream_case_passes_on_sandlot(upstream: str, case_id: str) -> None:
    case = next(iter_cases(unittest.TestLoader().loadTestsFromName(case_id)))
    result = unittest.TestResult()
    STATE_ERRORS.clear()
    await asyncio.to_thread(case.run, result)
    problems = [text for _, text in result.errors + result.failures]
    assert not problems, "\n".join([*problems, "state errors reported:", *STATE_ERRORS])
    assert not result.skipped, result.skipped
    auth = {"Authorization": f"Bearer {upstream}"}
    async with httpx.AsyncClient(base_url=TARGET["url"], headers=auth) as http:
        left = (await http.get("/v1/sessions", params={"status": "active"})).raise_for_status().json()
        if case_id in LEAVES_ITS_SANDBOX:
            assert len(left) == 1, left
            (await http.delete(f"/v1/sessions/{left[0]['id']}")).raise_for_status()
        else:
            assert not left, f"the case left sessions behind: {[s['id'] for s in left]}"
