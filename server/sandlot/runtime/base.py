"""The runtime protocol every backend implements, and the value types it speaks.

The services layer only ever talks to :class:`SandboxRuntime`; the Docker and local runtimes
pass the same integration test suite (``tests/integration/runtime``).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sandlot.runtime.archives import ArchiveReport
    from sandlot.runtime.channels import ChannelLookup
    from sandlot.runtime.listing import Listed

__all__ = [
    "LABEL_INSTANCE",
    "LABEL_MANAGED",
    "LABEL_SANDBOX",
    "LABEL_TENANT",
    "ExecRequest",
    "ExecResult",
    "FileStream",
    "Limits",
    "LimitsHit",
    "OwnedSandbox",
    "ProcessStream",
    "SandboxRuntime",
    "SandboxSpec",
    "Usage",
    "WorkspaceScan",
]

LABEL_MANAGED = "dev.sandlot.managed"
LABEL_INSTANCE = "dev.sandlot.instance"
LABEL_TENANT = "dev.sandlot.tenant"
LABEL_SANDBOX = "dev.sandlot.sandbox"


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits enforced inside the sandbox."""

    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 256
    disk_mb: int = 2048


@dataclass(frozen=True, slots=True)
class SandboxSpec:
    """Everything a runtime needs to create one sandbox."""

    sandbox_id: str
    tenant_id: str
    image: str
    limits: Limits = field(default_factory=Limits)
    env: Mapping[str, str] = field(default_factory=dict)
    network: bool = False
    read_only_root: bool = False
    workspace: str = "/workspace"
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExecRequest:
    """One command to run to completion.

    ``command`` is an argv list, or a string run by ``/bin/sh -c``. ``stdin`` is bytes, or a
    stream of them sent as the command reads (a request body, of any size up to its limit).
    ``user``: run as this user of the sandbox instead of the image's (the caller checked it
    is allowed; a runtime without ``other_users`` refuses it).
    """

    command: Sequence[str] | str
    stdin: bytes | AsyncIterable[bytes] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout: float = 60.0
    output_limit: int = 1 << 20
    user: str | None = None

    def argv(self) -> list[str]:
        """The argv the runtime executes."""
        if isinstance(self.command, str):
            return ["/bin/sh", "-c", self.command]
        return list(self.command)

    def validate(self) -> None:
        """422 for what no process can be given: NUL bytes, a relative working directory."""
        from sandlot.domain.env import validate_env
        from sandlot.domain.errors import InvalidInput
        from sandlot.domain.users import check_user_name

        if any("\x00" in arg for arg in self.argv()):
            raise InvalidInput("the command contains a NUL byte", field="command")
        if self.cwd is not None and (not self.cwd.startswith("/") or "\x00" in self.cwd):
            raise InvalidInput("cwd must be an absolute path without NUL bytes", field="cwd")
        validate_env(self.env)
        if self.user is not None:
            check_user_name(self.user)


@dataclass(slots=True)
class ExecResult:
    """What a finished (or killed) command produced.

    ``exit_code`` is None when the command was killed for its timeout; ``truncated`` says the
    output passed ``output_limit`` and the rest was drained and discarded. After a command that
    failed (non-zero exit or timeout) the sandbox's limit counters are read: ``oom_killed`` says
    the kernel killed a process for memory, ``pids_limited`` that a fork was refused at the
    process limit, since the last look (the sandbox's, not only this command's).
    """

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_ms: float
    timed_out: bool = False
    truncated: bool = False
    oom_killed: bool = False
    pids_limited: bool = False


@dataclass(frozen=True, slots=True)
class LimitsHit:
    """Which of a sandbox's limits stopped something since the last look: the memory limit
    (a process OOM-killed) and the process limit (a fork refused)."""

    oom_killed: bool = False
    pids_limited: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    """What a sandbox uses now: CPU over the last moment (100 = one core busy), memory in use
    (page cache left out, as ``docker stats`` does) and its limit, and how many processes."""

    cpu_percent: float
    memory_bytes: int
    memory_limit: int | None
    processes: int


@dataclass(slots=True)
class FileStream:
    """A file being read out of a sandbox: its size, then its bytes. Iterate ``chunks`` to the
    end or close it (``aclose``) to release what holds the file open."""

    size: int
    chunks: AsyncIterator[bytes]

    async def read_all(self) -> bytes:
        parts = [chunk async for chunk in self.chunks]
        return b"".join(parts)


@dataclass(frozen=True, slots=True)
class OwnedSandbox:
    """A sandbox found on the runtime that carries our labels."""

    ref: str
    labels: Mapping[str, str]
    running: bool


class PtyStream(Protocol):
    """A process on a pseudo-terminal: one output stream (what the terminal shows)."""

    async def write(self, data: bytes) -> None: ...

    async def read(self) -> bytes | None:
        """The next output, or None once the process has ended."""
        ...

    async def resize(self, cols: int, rows: int) -> None: ...

    async def close(self) -> None: ...


class ProcessStream(Protocol):
    """A long-lived process in a sandbox with its stdin open (e.g. the persistent shell)."""

    async def write(self, data: bytes) -> None:
        """Send bytes to the process's stdin."""
        ...

    async def read(self) -> tuple[int, bytes] | None:
        """Next output chunk as (1 for stdout or 2 for stderr, bytes); None once it ended."""
        ...

    async def close(self) -> None:
        """Stop reading and release the connection (the process sees EOF on stdin)."""
        ...


class WorkspaceScan(Protocol):
    """A workspace listed: every entry with its kind, mode, size and change key, without its
    content (see :mod:`sandlot.runtime.listing`); ``listing`` is None when it may be
    incomplete (a directory the sandbox user cannot read, an entry gone meanwhile)."""

    listing: list[Listed] | None

    def export(self, names: Sequence[str]) -> AsyncIterator[bytes]:
        """A workspace archive (or several, one after the other) of the entries ``names``
        (relative to the workspace) alone, read as the sandbox user; an entry that cannot be
        read is left out, or the stream fails. At most once per scan."""
        ...


@runtime_checkable
class SandboxRuntime(Protocol):
    """A place sandboxes run. Every method may raise :class:`RuntimeUnavailable` (the engine
    does not answer) or :class:`SandboxStateError` (this sandbox is broken or gone)."""

    name: str
    #: whether sandboxes are really isolated (containers) or plain host processes.
    isolated: bool
    #: whether ``Limits.disk_mb`` is enforced (decided by the engine's storage, see ``ping``).
    disk_limits: bool
    #: whether a command can run as another user of the sandbox (``ExecRequest.user``).
    other_users: bool
    #: whether a background process's start may stay attached to relay its output live
    #: (``PROC_START``'s LIVE): only where a reader that goes away costs the relay nothing
    #: (the engine drops what it writes), not where closing the stream kills the relay.
    relays_output: bool

    async def ping(self) -> None:
        """Raise unless the runtime answers."""
        ...

    async def image_exists(self, image: str) -> bool:
        """Whether ``image`` can be used without pulling."""
        ...

    async def create(self, spec: SandboxSpec) -> str:
        """Create and start a sandbox; return its runtime reference."""
        ...

    def ref_for(self, sandbox_id: str) -> str:
        """A reference that reaches the sandbox ``sandbox_id`` even when its create was
        interrupted before it returned one (e.g. the container's name)."""
        ...

    async def remove(self, ref: str) -> None:
        """Stop and remove the sandbox; a missing one is not an error."""
        ...

    async def is_running(self, ref: str) -> bool:
        """Whether the sandbox exists and runs."""
        ...

    async def list_owned(self, instance: str | None = None) -> list[OwnedSandbox]:
        """Sandboxes carrying our managed label (optionally one service instance's)."""
        ...

    async def exec(self, ref: str, request: ExecRequest) -> ExecResult:
        """Run a command to completion, bounded by its timeout and output limit."""
        ...

    async def run_program(
        self,
        ref: str,
        script: str,
        args: Sequence[str] = (),
        *,
        stdin: bytes | None = None,
        timeout: float = 10.0,
        output_limit: int = 1 << 16,
    ) -> ExecResult:
        """Run a program of the service's (``sh -c script sh args...``) as the sandbox user with
        the helper PATH: in the sandbox's idle channel (see ``use_channels``), else in a process
        of its own. One still running at ``timeout`` is killed: ``timed_out``, no exit code."""
        ...

    def use_channels(self, lookup: ChannelLookup) -> None:
        """Where ``run_program`` (and the Docker runtime's file reads and writes) may find an
        attached, idle shell of a sandbox (see :mod:`sandlot.runtime.channels`)."""
        ...

    async def open_process(
        self, ref: str, argv: Sequence[str], env: Mapping[str, str] | None = None
    ) -> ProcessStream:
        """Start a process with stdin, stdout and stderr attached."""
        ...

    async def open_pty(
        self, ref: str, argv: Sequence[str], *, cols: int, rows: int, env: Mapping[str, str] | None = None
    ) -> PtyStream:
        """Start a process on a new pseudo-terminal of ``cols`` x ``rows``; closing the
        stream kills it and everything it started."""
        ...

    def state_dir(self, ref: str) -> str:
        """An in-sandbox directory for our bookkeeping (on a tmpfs where possible)."""
        ...

    def process_dir(self, ref: str) -> str:
        """Where background processes keep their output and bookkeeping: the sandbox's disk,
        counted in its disk limit, not the state tmpfs (64 MB on Docker: two verbose processes
        filled it, and then no process started and the session's shell kept no state)."""
        ...

    async def kill_tree(self, ref: str, pid: int, *, include_root: bool = True) -> None:
        """Kill ``pid`` (as seen inside the sandbox) and all its descendants; with
        ``include_root=False`` only the descendants."""
        ...

    async def oom_killed(self, ref: str) -> bool:
        """Whether the kernel OOM-killed a process in the sandbox since the last call."""
        ...

    async def limits_hit(self, ref: str) -> LimitsHit:
        """Whether the memory or the process limit stopped something in the sandbox since the
        last look (either this or :meth:`oom_killed`); all False when it cannot tell."""
        ...

    async def usage(self, ref: str) -> Usage:
        """CPU and memory in use now, measured by the host (never by the sandbox itself);
        takes about a second (two samples). Raises :class:`SandboxStateError` when gone."""
        ...

    async def reset(self, ref: str, workspace: str, *, then_shell: bool = False) -> ProcessStream | None:
        """Make the sandbox a clean slate for another session: kill every process a client
        started, empty the workspace and every other writable place. Raises
        :class:`SandboxStateError` unless that can be proven (the sandbox is then replaced).
        ``then_shell``: return a fresh ``/bin/sh`` started in the clean sandbox, attached (the
        next session's shell; on Docker the reset's own process becomes it: one exec)."""
        ...

    async def write_file(
        self, ref: str, path: str, workspace: str, data: AsyncIterable[bytes], size: int
    ) -> None:
        """Write ``size`` bytes from ``data`` at absolute in-sandbox ``path`` (inside
        ``workspace``), as the sandbox user; the old file stays unless all arrived."""
        ...

    async def read_file(self, ref: str, path: str, workspace: str, limit: int) -> FileStream:
        """Open the regular file at ``path`` (inside ``workspace``, at most ``limit`` bytes)."""
        ...

    def export_workspace(self, ref: str, workspace: str, limit: int) -> AsyncIterator[bytes]:
        """The workspace as an uncompressed tar whose member names are relative to it, as a
        stream; ``PayloadTooLarge`` once it passes ``limit`` bytes (before the first chunk
        when the size is known to be over)."""
        ...

    def scan_workspace(self, ref: str, workspace: str) -> AbstractAsyncContextManager[WorkspaceScan]:
        """List the workspace (see :class:`WorkspaceScan`), keeping what listed it at hand
        to export some of its entries until the block ends."""
        ...

    async def import_workspace(
        self,
        ref: str,
        workspace: str,
        archive: AsyncIterable[bytes],
        report: ArchiveReport,
        *,
        check_links: bool,
    ) -> None:
        """Unpack a checked workspace archive (see :func:`archives.check_archive`, whose
        ``report`` is complete once ``archive`` is) over the workspace, as the sandbox user.
        ``check_links``: first refuse (``PathOutsideWorkspace``) when a link already in the
        workspace would lead a member outside (not needed for an empty workspace)."""
        ...

    async def pause(self, ref: str) -> Sequence[int]:
        """Stop the sandbox's processes (it keeps its memory and files); a process of ours
        may still start in it (the snapshot, the reset, the thaw). Returns the processes that
        were stopped before, for :meth:`unpause` to leave so."""
        ...

    async def unpause(self, ref: str, keep: Sequence[int] = ()) -> None:
        """Undo :meth:`pause`, leaving ``keep`` stopped; raises ``SandboxStateError`` when the
        sandbox is gone."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
