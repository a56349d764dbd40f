"""Sandlot as a sandbox provider for the OpenAI Agents SDK (``agents.sandbox``).

    from agents import Runner, RunConfig
    from agents.sandbox import SandboxAgent, SandboxRunConfig
    from sandlot_client.openai_agents import SandlotSandboxClient, SandlotSandboxClientOptions

    client = SandlotSandboxClient("http://127.0.0.1:8480", api_key)
    session = await client.create(options=SandlotSandboxClientOptions(environment="py", pause_on_exit=True))
    async with session:
        await Runner.run(agent, "...", run_config=RunConfig(sandbox=SandboxRunConfig(session=session)))
        state = client.serialize_session_state(session.state)   # JSON: keep it anywhere

    resumed = await client.resume(client.deserialize_session_state(state))

Each SDK session is one Sandlot session. ``exec`` runs one-shot processes (``shell.exec``, so
several may run at once). The SDK's interactive exec is supported (``supports_pty``): the
``exec_command`` tool starts a Sandlot background process, so a command that outlives its
``yield_time_ms`` keeps running and the model polls it, and writes to it, with ``write_stdin``
(``tty=True``: a terminal in the sandbox fed by a stdin pipe; ``tty=False``: stdin is
/dev/null, as in the SDK's own sandboxes). Output comes from a stream that resumes from its byte
offset after a lost connection, so the model sees every byte once; the processes are killed
when the session stops or closes (see :mod:`sandlot_client._agents_pty`). ``read``/``write``
use the workspace file activities,
``persist_workspace``/``hydrate_workspace`` move the workspace as a tar. Closing the session
*ends* the Sandlot session (its sandbox is reset and goes back to the pool), as the SDK's E2B
and Runloop providers do; with ``pause_on_exit=True`` it *suspends* it instead (a server-side
snapshot, then the sandbox is frozen), so ``resume`` reattaches to the same sandbox when it is
still there; when it is not, the service hydrates a replacement from that snapshot; when the
Sandlot session has ended, a new one starts from its last snapshot. Only if Sandlot holds no
snapshot at all does the SDK restore the workspace from its own snapshot (``state.snapshot``)
through ``hydrate_workspace``. ``client.delete`` ends the Sandlot session. Install with
``pip install 'sandlot-client[agents]'``.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Literal

from agents.sandbox.errors import (
    ExecTimeoutError,
    ExecTransportError,
    InvalidManifestPathError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
)
from agents.sandbox.manifest import Manifest
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.dependencies import Dependencies
from agents.sandbox.session.manager import Instrumentation
from agents.sandbox.session.pty_types import PtyExecUpdate
from agents.sandbox.session.sandbox_client import BaseSandboxClient, BaseSandboxClientOptions
from agents.sandbox.session.sandbox_session import SandboxSession
from agents.sandbox.session.sandbox_session_state import SandboxSessionState
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot
from agents.sandbox.types import ExecResult, User

from sandlot_client._agents_pty import PtyProcesses
from sandlot_client.aio import AsyncSandlot, AsyncSession, output_bytes
from sandlot_client.errors import Conflict, InvalidInput, NotFound, SandlotError

__all__ = [
    "SandlotSandboxClient",
    "SandlotSandboxClientOptions",
    "SandlotSandboxSession",
    "SandlotSandboxSessionState",
]

BACKEND = "sandlot"
DEFAULT_EXEC_TIMEOUT = 600.0
MAX_EXEC_TIMEOUT = 3600.0  # the service's bound


class SandlotSandboxClientOptions(BaseSandboxClientOptions):
    """Where new sessions come from: a Sandlot environment (by name) and, optionally, one of
    its images (default: the environment's first). ``pause_on_exit``: closing a session
    suspends its Sandlot session, to be resumed, where by default it ends it."""

    type: Literal["sandlot"] = "sandlot"
    environment: str
    image: str | None = None
    pause_on_exit: bool = False

    def __init__(
        self,
        environment: str,
        image: str | None = None,
        *,
        pause_on_exit: bool = False,
        type: Literal["sandlot"] = "sandlot",
    ) -> None:
        super().__init__(type=type, environment=environment, image=image, pause_on_exit=pause_on_exit)


class SandlotSandboxSessionState(SandboxSessionState):
    """What resumes a session: the Sandlot session it runs on. Holds no API key."""

    type: Literal["sandlot"] = "sandlot"
    environment: str
    image: str | None = None
    sandlot_session_id: str
    sandbox_id: str | None = None
    pause_on_exit: bool = False


class SandlotSandboxSession(BaseSandboxSession):
    """One SDK sandbox session on one Sandlot session."""

    state: SandlotSandboxSessionState

    def __init__(self, *, sandlot: AsyncSandlot, remote: AsyncSession, state: SandlotSandboxSessionState):
        self._sandlot = sandlot
        self._remote = remote
        self.state = state
        self.resumed_how: str | None = None  # reattached, hydrated, from_snapshot or fresh
        self._pty = PtyProcesses(remote)

    @property
    def remote(self) -> AsyncSession:
        """The Sandlot session (for anything the SDK has no verb for: processes, pty...)."""
        return self._remote

    async def _exec_internal(self, *command: str | Path, timeout: float | None = None) -> ExecResult:
        argv = [str(c) for c in command]
        try:
            result = await self._remote.shell.exec(
                argv,
                cwd=self.state.manifest.root,
                timeout=min(timeout or DEFAULT_EXEC_TIMEOUT, MAX_EXEC_TIMEOUT),
            )
        except SandlotError as exc:
            raise ExecTransportError(command=argv, cause=exc, retryable=exc.retryable) from exc
        if result.get("timed_out"):
            raise ExecTimeoutError(command=argv, timeout_s=timeout)
        stdout, stderr = output_bytes(result)
        exit_code = result.get("exit_code")
        return ExecResult(stdout=stdout, stderr=stderr, exit_code=-1 if exit_code is None else exit_code)

    def supports_pty(self) -> bool:
        return True

    async def pty_exec_start(
        self,
        *command: str | Path,
        timeout: float | None = None,
        shell: bool | list[str] = True,
        user: str | User | None = None,
        tty: bool = False,
        yield_time_s: float | None = None,
        max_output_tokens: int | None = None,
    ) -> PtyExecUpdate:
        """Start the command as a background process; its output for ``yield_time_s`` (10 s by
        default), and its process id while it runs. ``timeout`` is not a limit on the command
        (the SDK's own sandboxes ignore it too)."""
        argv = [str(c) for c in self._prepare_exec_command(*command, shell=shell, user=user)]
        yield_ms = 10_000 if yield_time_s is None else int(yield_time_s * 1000)
        return await self._pty.start(
            argv, cwd=self.state.manifest.root, tty=tty, yield_ms=yield_ms, max_tokens=max_output_tokens
        )

    async def pty_write_stdin(
        self,
        *,
        session_id: int,
        chars: str,
        yield_time_s: float | None = None,
        max_output_tokens: int | None = None,
    ) -> PtyExecUpdate:
        """Write ``chars`` (none: only poll) and return the output since the last call."""
        yield_ms = 250 if yield_time_s is None else int(yield_time_s * 1000)
        return await self._pty.write(session_id, chars, yield_ms=yield_ms, max_tokens=max_output_tokens)

    async def pty_terminate_all(self) -> None:
        await self._pty.terminate_all()

    async def _validate_path_access(self, path: Path | str, *, for_write: bool = False) -> Path:
        """The SDK's own check is lexical; its helpers that run commands (``ls``, ``mkdir``,
        ``rm``, ``mv``, ``extract``...) resolve the path in the sandbox first, so a link leading
        out of the workspace is refused as ``InvalidManifestPathError``, as the SDK's remote
        providers do (``read``/``write`` are checked by the service itself)."""
        return await self._validate_remote_path_access(path, for_write=for_write)

    async def read(self, path: Path, *, user: str | User | None = None) -> io.IOBase:
        target = self.normalize_path(path)
        try:
            with _confined(target):
                data = await self._remote.files.read(target.as_posix())
        except NotFound as exc:
            raise WorkspaceReadNotFoundError(path=target, cause=exc) from exc
        except SandlotError as exc:  # a directory, too large, not readable, the sandbox lost
            raise WorkspaceArchiveReadError(path=target, cause=exc, retryable=exc.retryable) from exc
        return io.BytesIO(data)

    async def write(self, path: Path, data: io.IOBase, *, user: str | User | None = None) -> None:
        target = self.normalize_path(path, for_write=True)
        payload = data.read()
        try:
            with _confined(target):
                await self._remote.files.write(
                    target.as_posix(), payload.encode() if isinstance(payload, str) else bytes(payload)
                )
        except SandlotError as exc:  # a directory there, too large, no room, the sandbox lost
            raise WorkspaceArchiveWriteError(path=target, cause=exc, retryable=exc.retryable) from exc

    async def running(self) -> bool:
        try:
            await self._remote.refresh()
        except SandlotError:
            return False
        return self._remote.status == "active"

    async def persist_workspace(self) -> io.IOBase:
        root = Path(self.state.manifest.root)
        try:
            archive = await self._remote.export_workspace()
        except SandlotError as exc:
            raise WorkspaceArchiveReadError(path=root, cause=exc) from exc
        skip = self._persist_workspace_skip_relpaths()
        return io.BytesIO(_without(archive, skip) if skip else archive)

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        root = Path(self.state.manifest.root)
        try:
            await self._remote.import_workspace(data.read())
        except SandlotError as exc:
            raise WorkspaceArchiveWriteError(path=root, cause=exc) from exc

    async def _after_start_failed(self) -> None:
        """A session whose start failed (its workspace could not be set up) is ended at once
        (suspended with ``pause_on_exit``), never left active until its idle timeout:
        ``async with`` gives no exit to a failed entry. Best effort: the start's own error is
        what the caller sees."""
        with contextlib.suppress(SandlotError):
            await (self._remote.suspend() if self.state.pause_on_exit else self._remote.end())

    async def _shutdown_backend(self) -> None:
        """End the Sandlot session (its sandbox goes back to the pool), or with
        ``pause_on_exit`` suspend it (snapshot, then freeze) so that a later ``resume`` finds
        everything. A suspended session's sandbox stays out of its pool until it is resumed or
        ended: sessions left suspended fill a pool."""
        if self._remote.status != "active":
            return
        with contextlib.suppress(Conflict, NotFound):  # already suspended or ended elsewhere
            if self.state.pause_on_exit:
                await self._remote.suspend()
            else:
                await self._remote.end()


def _without(archive: bytes, skip: set[Path]) -> bytes:
    """The workspace archive minus the members under the relative paths in ``skip``."""
    prefixes = {PurePosixPath(p.as_posix()) for p in skip}
    out = io.BytesIO()
    with (
        tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as src,
        tarfile.open(fileobj=out, mode="w:") as dst,
    ):
        for member in src:
            name = PurePosixPath(member.name.removeprefix("./"))
            if any(name == p or p in name.parents for p in prefixes):
                continue
            dst.addfile(member, src.extractfile(member) if member.isfile() else None)
    return out.getvalue()


class SandlotSandboxClient(BaseSandboxClient[SandlotSandboxClientOptions]):
    """Creates, resumes and deletes SDK sandbox sessions on a Sandlot service.

    Pass ``base_url`` and ``api_key`` (the client then owns its connection: close it with
    :meth:`aclose`), or an existing :class:`AsyncSandlot` as ``sandlot``. ``options``: what
    :meth:`create` uses when given none (so ``SandboxRunConfig(client=...)`` needs no options).
    """

    backend_id = BACKEND

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        sandlot: AsyncSandlot | None = None,
        options: SandlotSandboxClientOptions | None = None,
        instrumentation: Instrumentation | None = None,
        dependencies: Dependencies | None = None,
    ) -> None:
        super().__init__()
        if sandlot is None:
            if base_url is None or api_key is None:
                raise ValueError("pass base_url and api_key, or sandlot=AsyncSandlot(...)")
            sandlot = AsyncSandlot(base_url, api_key)
            self._owned: AsyncSandlot | None = sandlot
        else:
            self._owned = None
        self.sandlot = sandlot
        self._instrumentation = instrumentation or Instrumentation()
        self._dependencies = dependencies
        self.options = options
        # the SDK's runner asks for options only of a client that has no default
        self.supports_default_options = options is not None

    async def aclose(self) -> None:
        if self._owned is not None:
            await self._owned.close()

    async def __aenter__(self) -> SandlotSandboxClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def _session(self, remote: AsyncSession, state: SandlotSandboxSessionState) -> SandlotSandboxSession:
        state.sandlot_session_id = remote.id
        state.sandbox_id = remote.sandbox_id
        state.image = remote.data.get("image") or state.image
        return SandlotSandboxSession(sandlot=self.sandlot, remote=remote, state=state)

    async def create(
        self,
        *,
        snapshot: SnapshotSpec | SnapshotBase | None = None,
        manifest: Manifest | None = None,
        options: SandlotSandboxClientOptions | None = None,
    ) -> SandboxSession:
        options = options if options is not None else self.options
        if options is None:
            raise ValueError("pass options=SandlotSandboxClientOptions(...) here or to the client")
        manifest = self._validate_manifest_for_create(manifest if manifest is not None else Manifest())
        remote = await self.sandlot.start_session(options.environment, image=options.image)
        session_id = uuid.uuid4()
        state = SandlotSandboxSessionState(
            session_id=session_id,
            manifest=manifest,
            snapshot=resolve_snapshot(snapshot, str(session_id)),
            environment=options.environment,
            image=options.image,
            sandlot_session_id=remote.id,
            pause_on_exit=options.pause_on_exit,
        )
        inner = self._session(remote, state)
        inner.resumed_how = "fresh"
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        """End the Sandlot session: its sandbox is reset and goes back to the pool."""
        inner = session._inner
        if not isinstance(inner, SandlotSandboxSession):
            raise TypeError("SandlotSandboxClient.delete expects a SandlotSandboxSession")
        with contextlib.suppress(NotFound):
            await inner.remote.end()
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        """Reattach to the session's sandbox, or let the service hydrate a replacement from its
        last snapshot; if the Sandlot session has ended, start a new one from that snapshot;
        with no snapshot at all, start fresh and let the SDK restore ``state.snapshot``."""
        if not isinstance(state, SandlotSandboxSessionState):
            raise TypeError("SandlotSandboxClient.resume expects a SandlotSandboxSessionState")
        state.assert_path_grants_rebound()
        try:
            remote = await self.sandlot.resume({"session_id": state.sandlot_session_id})
            how = remote.resumed_how or "reattached"
        except (Conflict, NotFound):
            snapshot_id = await self._last_snapshot(state.sandlot_session_id)
            remote = await self.sandlot.start_session(
                state.environment, image=state.image, snapshot_id=snapshot_id
            )
            how = "from_snapshot" if snapshot_id else "fresh"
        inner = self._session(remote, state)
        inner.resumed_how = how
        preserved = how != "fresh"
        inner._set_start_state_preserved(preserved)
        if not preserved:
            state.workspace_root_ready = False
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def _last_snapshot(self, sandlot_session_id: str) -> str | None:
        try:
            snapshots = await AsyncSession(self.sandlot, {"id": sandlot_session_id}).checkpoints()
        except NotFound:
            return None
        return str(snapshots[-1]["id"]) if snapshots else None

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, SandlotSandboxSessionState)


@contextlib.contextmanager
def _confined(target: Path) -> Iterator[None]:
    """A path the service refuses as leaving the workspace (through a link: the SDK's own
    check is lexical) is the SDK's ``InvalidManifestPathError``, as its remote providers raise
    (``apply_patch`` gets it through ``read``/``write``)."""
    try:
        yield
    except InvalidInput as exc:
        if exc.code != "path_outside_workspace":
            raise
        raise InvalidManifestPathError(rel=target.as_posix(), reason="escape_root", cause=exc) from exc
