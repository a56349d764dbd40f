"""Sandlot as a ``langfun.env`` sandbox service: ``lf.env.Environment`` code runs unchanged,
with each langfun sandbox being one Sandlot session.

    import langfun as lf
    from sandlot_client.langfun_env import SandlotSandboxService

    env = lf.env.Environment(sandboxes={
        "sandlot": SandlotSandboxService(
            base_url="http://127.0.0.1:8480",
            api_key=key,
            sandlot_environment="py",
            image_ids=["sandlot/python:3"],
        ),
    })
    with env:
        with env.sandbox() as sb:
            print(sb.shell("python3 -V")["stdout"])

Starting a langfun sandbox starts a Sandlot session (a warm container, in milliseconds, from
the environment's pool); shutting it down ends the session. Sandlot pools the containers, so the
service's own ``pool_size`` defaults to 0 (no langfun-side pool); with a langfun pool, a sandbox
keeps its Sandlot session, and its workspace, across user sessions. Transport failures and lost
sandboxes (a killed container, a session ended elsewhere) raise ``lf.env.SandboxStateError``, so
langfun shuts the sandbox down and serves the next request from a healthy one. The API key
comes from ``api_key`` (kept out of the symbolic form, so it never shows in reprs or logs) or
from ``SANDLOT_API_KEY``. Install with ``pip install 'sandlot-client[langfun]'``.
"""

import contextlib
import logging
import os
import threading
from collections.abc import Iterator
from typing import Annotated, Any

import pyglove as pg
from langfun.env import interface
from langfun.env.base_sandbox import BaseSandbox
from langfun.env.base_sandbox_service import PooledSandboxService

from sandlot_client.errors import (
    ClientClosed,
    Conflict,
    NotFound,
    RuntimeUnavailable,
    SandboxStateError,
    SandlotError,
    TransportError,
)
from sandlot_client.sync import Sandlot, Session

__all__ = ["SandlotSandbox", "SandlotSandboxService"]

log = logging.getLogger(__name__)

# what means "this sandbox is gone or unreachable" rather than "this call was wrong" (a client
# closed under a call: the service was shut down meanwhile); a body over the service's limit is
# PayloadTooLarge (413), raised as it is: the sandbox is fine
LOST = (SandboxStateError, TransportError, RuntimeUnavailable, ClientClosed)


class SandlotSandboxService(PooledSandboxService):
    """Sandboxes from one Sandlot environment; ``image_ids`` are images it offers."""

    base_url: Annotated[str, "The Sandlot service, e.g. http://127.0.0.1:8480."]
    sandlot_environment: Annotated[str, "The Sandlot environment (name or id) sessions start from."]
    command_timeout: Annotated[float, "Default timeout in seconds of shell() and exec()."] = 60.0
    pool_size = 0

    @pg.explicit_method_override
    def __init__(self, *args: Any, api_key: str | None = None, **kwargs: Any) -> None:
        """``api_key`` is kept outside the symbolic fields, so it never shows in the service's
        repr, logs or clones; without it (or in a clone) ``SANDLOT_API_KEY`` is used."""
        super().__init__(*args, **kwargs)
        self._api_key = api_key

    def _on_bound(self) -> None:
        super()._on_bound()
        if not hasattr(self, "_lock"):  # bound again on a rebind: keep the client and sessions
            self._client: Sandlot | None = None  # made on first use, closed by _shutdown
            self._closed = self._closing = False
            self._starting = 0  # session starts under way
            self._lock = threading.RLock()
            self._let_go = threading.Condition(self._lock)  # a sandbox ended its session
            self._holding: dict[int, SandlotSandbox] = {}  # by id(): sandboxes with a session

    @property
    def client(self) -> Sandlot:
        with self._lock:
            if self._closed:
                raise interface.SandboxServiceOutageError(
                    f"Sandbox service {self.id} is shut down.",
                    sandbox_service=self,
                    offline_duration=self.offline_duration,
                )
            if self._client is None:
                key = getattr(self, "_api_key", None) or os.environ.get("SANDLOT_API_KEY")
                if not key:
                    raise ValueError("SandlotSandboxService needs api_key= or SANDLOT_API_KEY")
                self._client = Sandlot(self.base_url, key)
            return self._client

    def _start(self) -> None:
        with self._lock:
            self._closed = self._closing = False
        client = self.client
        try:  # the environment must exist (NotFound and bad keys raise as they are)
            client._run(client.aio._get_environment(self.sandlot_environment))
        except (TransportError, RuntimeUnavailable) as exc:
            raise interface.SandboxServiceOutageError(
                f"Sandlot at {self.base_url} is unreachable: {exc}",
                sandbox_service=self,
                offline_duration=self.offline_duration,
            ) from exc
        super()._start()

    def _shutdown(self) -> None:
        """langfun shuts the pooled sandboxes down, but returns at once from one whose
        shutdown another thread began (after a failed proactive setup or ping), and knows
        nothing of a start under way in another thread: no new start is let in, those under
        way and those shutting down are waited for (up to ``command_timeout``), then every
        Sandlot session still open is ended here, before the client closes, so none outlives
        the service (one the service cannot reach to end ends at its idle timeout)."""
        with self._lock:
            self._closing = True
        try:
            super()._shutdown()
        finally:
            with self._let_go:
                self._let_go.wait_for(self._settled, timeout=self.command_timeout)
                self._closed = True
                client, self._client = self._client, None
                left = list(self._holding.values())
            try:
                for sandbox in left:
                    try:
                        sandbox._release()
                    except interface.SandboxStateError as exc:
                        log.warning("could not end the Sandlot session of %s: %s", sandbox.id, exc)
            finally:
                if client is not None:
                    client.close()

    def _settled(self) -> bool:
        shutting_down = interface.Sandbox.Status.SHUTTING_DOWN
        return not self._starting and all(s.status != shutting_down for s in self._holding.values())

    @contextlib.contextmanager
    def _a_start(self, sandbox: "SandlotSandbox") -> Iterator[None]:
        """A sandbox's session start, counted while it runs; refused once shutdown began."""
        with self._let_go:
            if self._closing:
                raise interface.SandboxStateError("the sandbox service is shutting down", sandbox=sandbox)
            self._starting += 1
        try:
            yield
        finally:
            with self._let_go:
                self._starting -= 1
                self._let_go.notify_all()

    def _hold(self, sandbox: "SandlotSandbox", holds: bool) -> None:
        with self._let_go:
            if holds:
                self._holding[id(sandbox)] = sandbox
            else:
                self._holding.pop(id(sandbox), None)
                self._let_go.notify_all()

    def _create_sandbox(
        self,
        image_id: str,
        sandbox_id: str,
        reusable: bool,
        proactive_session_setup: bool,
        keepalive_interval: float | None,
    ) -> "SandlotSandbox":
        fields = self._sandbox_fields(
            image_id, sandbox_id, reusable, proactive_session_setup, keepalive_interval
        )
        return SandlotSandbox(**fields)

    def _sandbox_fields(
        self,
        image_id: str,
        sandbox_id: str,
        reusable: bool,
        proactive_session_setup: bool,
        keepalive_interval: float | None,
    ) -> dict[str, Any]:
        """What a sandbox of this service is made with (a subclass's sandbox adds its own)."""
        return {
            "sandbox_service": pg.Ref(self),
            "id": interface.Sandbox.Id(service_id=self.id, image_id=image_id, sandbox_id=sandbox_id),
            "image_id": image_id,
            "features": {k: v.clone() for k, v in self.features.items() if v.is_applicable(image_id)},
            "reusable": reusable,
            "proactive_session_setup": proactive_session_setup,
            "keepalive_interval": keepalive_interval,
        }


class SandlotSandbox(BaseSandbox):
    """One Sandlot session. ``shell``/``exec``/``read_file``/``write_file``/``python`` are its
    activities; :attr:`session` is the client session for the rest (processes, pty, suspend)."""

    def _on_bound(self) -> None:
        # langfun's own _on_bound forgets a live sandbox's housekeeping thread on every rebind
        # (of its fields or its features'): that thread then pinged on through the shutdown,
        # which neither stopped nor waited for it, and a ping its session's end cut short was
        # taken for a broken sandbox. A live one is kept.
        running = getattr(self, "_housekeep_thread", None), getattr(self, "_housekeep_event", None)
        super()._on_bound()
        if running[0] is not None and running[0].is_alive():
            self._housekeep_thread, self._housekeep_event = running
        if not hasattr(self, "_session"):
            self._session: Session | None = None
            # langfun calls one sandbox from several threads (a proactive session setup beside
            # the teardown of the last); the session's shell and interpreter run one command
            # at a time and refuse a second (409), so each waits its turn here
            self._turn = threading.Lock()
            self._ending = threading.Lock()

    @property
    def service(self) -> SandlotSandboxService:
        found = self.sandbox_service
        assert isinstance(found, SandlotSandboxService)
        return found

    @property
    def session(self) -> Session:
        if self._session is None:
            raise interface.SandboxStateError("the sandbox has no Sandlot session", sandbox=self)
        return self._session

    @property
    def sandlot_image(self) -> str:
        """The image this sandbox's session runs: its langfun ``image_id``."""
        return self.image_id

    def _lost(self, what: str, exc: SandlotError) -> interface.SandboxStateError:
        return interface.SandboxStateError(f"{what}: {exc.code}: {exc}", sandbox=self)

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        """Lost sandboxes and transport failures become ``SandboxStateError``; so does a
        session that is no longer active (ended by the service when its container died)."""
        try:
            yield
        except LOST as exc:
            raise self._lost(what, exc) from exc
        except Conflict as exc:
            if exc.body.get("resource_status") in ("ended", "suspended"):
                raise self._lost(what, exc) from exc
            raise

    def _start(self) -> None:
        with self.service._a_start(self):
            with self._guard("could not start a Sandlot session"):
                self._session = self.service.client.start_session(
                    self.service.sandlot_environment, image=self.sandlot_image
                )
            self.service._hold(self, True)
        super()._start()

    def _shutdown(self) -> None:
        self._release()

    def _release(self) -> None:
        """End the Sandlot session, once, whichever thread asks first."""
        with self._ending:
            session, self._session = self._session, None
        if session is None:
            return
        try:
            if session.status in ("active", "suspended"):
                session.end()
        except (NotFound, Conflict, ClientClosed):
            pass  # ended already (e.g. when its container was lost), or by the service's end
        except (TransportError, RuntimeUnavailable) as exc:
            raise self._lost("could not end the Sandlot session", exc) from exc
        finally:
            self.service._hold(self, False)

    def _ping(self) -> None:
        with self._guard("ping"):
            result = self.session.shell.exec(["true"], timeout=10)
        if result["exit_code"] != 0:
            raise interface.SandboxStateError("ping failed", sandbox=self, code="true")

    @interface.log_activity()
    def shell(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        """Run ``command`` in the session's persistent shell (cwd and exports carry over):
        ``exit_code``, ``stdout``, ``stderr``... A call from another thread waits for the one in
        progress (the shell runs one command at a time)."""
        with self._turn, self._guard(f"shell {command[:200]!r}"):
            return dict(self.session.shell.run(command, timeout=timeout or self.service.command_timeout))

    @interface.log_activity()
    def exec(self, argv: list[str], timeout: float | None = None) -> dict[str, Any]:
        """Run ``argv`` once in a fresh process."""
        with self._guard(f"exec {argv[:8]!r}"):
            return dict(self.session.shell.exec(argv, timeout=timeout or self.service.command_timeout))

    @interface.log_activity()
    def python(self, code: str, timeout: float | None = None) -> dict[str, Any]:
        with self._turn, self._guard("python"):
            return dict(self.session.python.run(code, timeout=timeout or self.service.command_timeout))

    @interface.log_activity()
    def read_file(self, path: str) -> bytes:
        """The file's bytes; ``FileNotFoundError`` when there is none."""
        with self._guard(f"read {path!r}"):
            try:
                return bytes(self.session.files.read(path))
            except NotFound as exc:
                raise FileNotFoundError(path) from exc

    @interface.log_activity()
    def write_file(self, path: str, content: str | bytes) -> None:
        with self._guard(f"write {path!r}"):
            self.session.files.write(path, content)
