"""The command line a local sandbox's command runs under.

Which confining programs this host has decides what isolation a local sandbox gets:
bubblewrap gives a command fresh namespaces (no network, a private /tmp, the workspace mounted
where the sandbox sees it, system directories read-only), prlimit bounds its memory and (as a
user of its own) its process count, and setpriv drops it to the sandbox's host user once
bubblewrap has set up as root. They are found once, and the command line is built here from
what was found, so the runtime and this builder never disagree about it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sandlot.domain.errors import InvalidInput
from sandlot.runtime.base import ExecRequest
from sandlot.runtime.local_meta import uid_of

__all__ = ["SANDBOX_STATE", "Confinement"]

SANDBOX_STATE = "/run/sandlot"  # where a sandbox sees its state directory under bubblewrap
_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

_ETC = (
    "passwd",
    "group",
    "hosts",
    "nsswitch.conf",
    "resolv.conf",
    "ld.so.cache",
    "localtime",
    "alternatives",
    "ssl",
    "ca-certificates",
)


@dataclass(frozen=True)
class Confinement:
    """The confining programs this host has (their paths, or None) and the command lines,
    environments and working directories built with them. ``home`` is a sandbox's directory
    and ``meta`` its record (see :mod:`sandlot.runtime.local_meta`)."""

    bwrap: str | None
    prlimit: str | None
    setpriv: str | None
    bash: str | None = None  # gives the command the sandbox's environment, as the sandbox

    @classmethod
    def of_host(cls) -> Confinement:
        found = shutil.which
        return cls(found("bwrap"), found("prlimit"), found("setpriv"), found("bash"))

    @property
    def env_by_descriptor(self) -> bool:
        """Whether the sandbox's environment reaches the command on a descriptor, read once no
        privilege is left (see ``_as_sandbox``), rather than with the launch."""
        return self.bwrap is not None and self.bash is not None

    def argv(
        self,
        home: Path,
        meta: Mapping[str, object],
        request: ExecRequest,
        pidns: int | None = None,
        envfd: int | None = None,
    ) -> list[str]:
        """``request``'s command wrapped in the programs there are (prlimit, then bubblewrap,
        then setpriv), in that order so each sets up what the next relies on; with ``pidns``
        (a descriptor it inherits) in that pid namespace; its environment from ``envfd``."""
        host_ws = str(home / "workspace")
        workspace = str(meta["workspace"])
        cwd = request.cwd or workspace
        argv: list[str] = []
        uid = uid_of(meta)
        if self.prlimit is not None:
            memory = int(meta["memory_mb"]) * 1024 * 1024  # type: ignore[call-overload]
            argv += [self.prlimit, f"--as={memory}"]
            if uid is not None:  # counted per user: the sandbox's own
                argv.append(f"--nproc={int(meta['pids'])}")  # type: ignore[call-overload]
            argv.append("--")
        if self.bwrap is None:
            return argv + request.argv()
        argv += [self.bwrap, "--die-with-parent", "--unshare-ipc", "--unshare-uts"]
        if pidns is not None:  # the sandbox's own (see local_pidns); its /proc is that one's
            argv += ["--pidns", str(pidns)]
        argv += ["--unshare-cgroup-try", "--unshare-net"]
        if uid is None:
            argv += ["--unshare-user", "--uid", "1000", "--gid", "1000"]
        for d in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32"):
            argv += ["--ro-bind-try", d, d]
        # directories bubblewrap makes itself are private to root unless told otherwise
        argv += ["--perms", "0755", "--dir", "/etc"]
        for name in _ETC:
            argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # /tmp and /dev/shm hold memory the address-space bound does not count: they get half
        # and a quarter of the sandbox's memory (unsized, each was half the host's RAM, #27)
        memory = int(meta["memory_mb"]) << 20  # type: ignore[call-overload]
        argv += [
            "--bind",
            host_ws,
            workspace,
            "--perms",
            "1777",
            "--size",
            str(memory // 2),
            "--tmpfs",
            "/tmp",
        ]
        argv += ["--perms", "0755", "--dir", "/run", "--bind", str(home / "state"), SANDBOX_STATE]
        argv += ["--proc", "/proc", "--dev", "/dev"]
        argv += ["--perms", "1777", "--size", str(memory // 4), "--tmpfs", "/dev/shm"]
        argv += ["--chdir", cwd]
        if uid is not None:  # bubblewrap sets up as root; the command runs as the sandbox's user
            assert self.setpriv is not None
            argv += [self.setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
            argv += ["--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]
        return [*argv, *self._as_sandbox(request, pidns, envfd)]

    def _as_sandbox(self, request: ExecRequest, pidns: int | None, envfd: int | None) -> list[str]:
        """The unprivileged end of the command line. The sandbox's environment is exported by
        bash, as the sandbox's user, from ``envfd`` (NUL-separated, :meth:`env_record`), so
        nothing of it (``LD_PRELOAD``, ``BASH_ENV``...) steers a program with privileges (#27
        review: a tenant's ``LD_PRELOAD`` ran in prlimit as root) and none of it is in a
        command line (readable by every user of the host); bash closes both descriptors
        (bubblewrap leaves them open) and runs the command."""
        if envfd is None:  # the environment came with the launch
            return request.argv()
        assert self.bash is not None
        closes = " ".join(f"{int(fd)}<&-" for fd in (envfd, pidns) if fd is not None)
        load = f'while IFS= read -r -d "" kv; do export -- "$kv" 2>/dev/null; done <&{int(envfd)}'
        return [self.bash, "-c", f'{load}; exec {closes}; exec -- "$@"', "bash", *request.argv()]

    def env_file(self, meta: Mapping[str, object], request: ExecRequest, host_ws: str) -> int | None:
        """A memory file holding the sandbox's environment as ``_as_sandbox`` reads it
        (NUL-separated: names are identifiers and values hold no NUL, ``validate_env``), read
        from its start; None where the environment comes with the launch."""
        if not self.env_by_descriptor:
            return None
        record = b"".join(
            f"{k}={v}".encode() + b"\0" for k, v in self.sandbox_env(meta, request, host_ws).items()
        )
        fd = os.memfd_create("sandbox-env", os.MFD_CLOEXEC)
        view = memoryview(record)
        while view:
            view = view[os.write(fd, view) :]
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def sandbox_env(self, meta: Mapping[str, object], request: ExecRequest, host_ws: str) -> dict[str, str]:
        """The command's whole environment: nothing of the service's own leaks in."""
        home = str(meta["workspace"]) if self.bwrap else host_ws
        env = {"PATH": _PATH, "HOME": home}
        env.update(dict(meta.get("env") or {}))  # type: ignore[call-overload]
        env.update(request.env)
        return env

    def env(self, meta: Mapping[str, object], request: ExecRequest, host_ws: str) -> dict[str, str]:
        """The environment the launch gets: a fixed one for the programs that run with
        privileges (the sandbox's own comes on a descriptor), or, where it cannot, the
        sandbox's."""
        if not self.env_by_descriptor:
            return self.sandbox_env(meta, request, host_ws)
        return {"PATH": _PATH}

    def host_cwd(self, home: Path, meta: Mapping[str, object], cwd: str | None) -> str:
        """Where the command starts on this host. Under bubblewrap it changes directory itself
        (to ``cwd`` as the sandbox sees it); without, ``cwd`` maps into the host workspace."""
        host_ws = home / "workspace"
        if self.bwrap is not None or cwd is None:
            return str(host_ws)
        rel = os.path.relpath(cwd, str(meta["workspace"]))
        if rel == ".." or rel.startswith("../"):
            raise InvalidInput("without bubblewrap, cwd must be inside the workspace", field="cwd")
        return str(host_ws / rel)
