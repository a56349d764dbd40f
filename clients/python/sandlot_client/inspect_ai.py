"""Sandlot as an inspect_ai sandbox environment: ``sandbox="sandlot"``.

    from inspect_ai import Task, task

    @task
    def ctf() -> Task:
        return Task(dataset=..., solver=..., sandbox=("sandlot", "sandlot.yaml"))

``sandlot.yaml`` (found by itself in the task's directory when ``sandbox="sandlot"`` names no
file; or a dict, or ``SandlotSandboxConfig(...)``)::

    url: http://127.0.0.1:8480        # default: SANDLOT_URL
    environment: ctf                  # default: SANDLOT_ENVIRONMENT
    image: sandlot/python:3           # one of the environment's images (default: its first)
    create_environment:               # made at task start if it does not exist (optional)
      images: [sandlot/python:3]
      pool_size: [2, 8]
      exec_users: [root]

The API key comes from ``SANDLOT_API_KEY`` (or ``api_key``, which is never written into the
eval log). The lifecycle: ``task_init`` checks the environment (or creates it), each sample's
``sample_init`` starts a Sandlot session (a warm sandbox from the environment's pool) and
``sample_cleanup`` ends it; ``task_cleanup`` has nothing left to do. ``exec`` is the session's
``shell.exec`` (cwd, env, stdin of any size up to the service's file limit, timeout, and
``user`` when the environment's ``exec_users`` and the service allow it: otherwise
``SandboxUserUnsupportedError``); files in the workspace go through the file routes (streamed),
others through commands run as the sandbox user. Errors are the ones inspect's own Docker
sandbox raises. Installed by ``pip install 'sandlot-client[inspect]'``, which registers the
provider through inspect's ``inspect_ai`` entry point.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
from pathlib import Path
from typing import Any, Literal, overload

import yaml
from inspect_ai.util import (
    ExecResult,
    OutputLimitExceededError,
    SandboxEnvironment,
    SandboxEnvironmentConfigType,
    SandboxEnvironmentLimits,
    SandboxUnavailableError,
    SandboxUserUnsupportedError,
    sandboxenv,
)
from pydantic import BaseModel, ConfigDict, Field, SecretStr
from typing_extensions import override

from sandlot_client._features import output_bytes
from sandlot_client._inspect_files import SessionFiles
from sandlot_client.aio import AsyncSandlot, AsyncSession
from sandlot_client.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    NotPermitted,
    RuntimeUnavailable,
    SandboxStateError,
    TransportError,
)

__all__ = ["SandlotSandboxConfig", "SandlotSandboxEnvironment"]

#: Files inspect finds by itself in a task's directory for ``sandbox="sandlot"``.
CONFIG_FILES = ["sandlot.yaml", "sandlot.yml", "sandlot.json"]
_UNAVAILABLE = (SandboxStateError, RuntimeUnavailable, TransportError)


class SandlotSandboxConfig(BaseModel):
    """Where the sandboxes come from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str | None = Field(default=None, description="The service; default SANDLOT_URL.")
    api_key: SecretStr | None = Field(
        default=None, exclude=True, description="Default SANDLOT_API_KEY; never serialised."
    )
    environment: str | None = Field(default=None, description="Default SANDLOT_ENVIRONMENT.")
    image: str | None = Field(default=None, description="One of the environment's images.")
    create_environment: dict[str, Any] | None = Field(
        default=None, description="Fields of the environment to create when there is none."
    )
    exec_timeout: float = Field(default=3600, gt=0, le=3600, description="For an exec without one.")

    def resolved(self) -> tuple[str, str, str]:
        """URL, key and environment, from here or the environment variables."""
        url = self.url or os.environ.get("SANDLOT_URL")
        key = self.api_key.get_secret_value() if self.api_key else os.environ.get("SANDLOT_API_KEY")
        environment = self.environment or os.environ.get("SANDLOT_ENVIRONMENT")
        missing = [n for n, v in (("url", url), ("api_key", key), ("environment", environment)) if not v]
        if missing:
            raise ValueError(f"the sandlot sandbox needs {', '.join(missing)} (or SANDLOT_* variables)")
        return str(url), str(key), str(environment)

    def client(self) -> AsyncSandlot:
        url, key, _ = self.resolved()
        # a request lasts as long as its command may (an exec's timeout), and a little more
        return AsyncSandlot(url, key, timeout=self.exec_timeout + 60)


def _load(config: SandboxEnvironmentConfigType | None) -> SandlotSandboxConfig:
    if config is None:
        return SandlotSandboxConfig()
    if isinstance(config, SandlotSandboxConfig):
        return config
    if isinstance(config, dict):
        return SandlotSandboxConfig(**config)
    if isinstance(config, str):
        text = Path(config).read_text()
        data = json.loads(text) if config.endswith(".json") else yaml.safe_load(text)
        if not isinstance(data, dict):
            raise ValueError(f"{config}: the sandlot sandbox configuration must be a mapping")
        return SandlotSandboxConfig(**data)
    if isinstance(config, BaseModel):
        return SandlotSandboxConfig(**config.model_dump())
    raise TypeError(f"unexpected sandlot sandbox configuration {type(config).__name__}")


@sandboxenv(name="sandlot")
class SandlotSandboxEnvironment(SandboxEnvironment):
    """One Sandlot session (``session``, its client ``client``) as an inspect sandbox."""

    # configurations read from files at task start, by the name given (a sample may start
    # in another directory)
    _configs: dict[str, SandlotSandboxConfig] = {}

    def __init__(
        self, client: AsyncSandlot, session: AsyncSession, workspace: str, exec_timeout: float
    ) -> None:
        super().__init__()
        self.client = client
        self.session = session
        self.files = SessionFiles(session, workspace)
        self._exec_timeout = exec_timeout

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def _config(cls, config: SandboxEnvironmentConfigType | None) -> SandlotSandboxConfig:
        if isinstance(config, str) and config in cls._configs:
            return cls._configs[config]
        loaded = _load(config)
        if isinstance(config, str):
            cls._configs[config] = loaded
        return loaded

    @override
    @classmethod
    def config_files(cls) -> list[str]:
        return CONFIG_FILES

    @override
    @classmethod
    def config_deserialize(cls, config: dict[str, Any]) -> BaseModel:
        return SandlotSandboxConfig(**config)

    @override
    @classmethod
    async def task_init(cls, task_name: str, config: SandboxEnvironmentConfigType | None) -> None:
        """The environment must exist (or is made from ``create_environment``)."""
        settings = cls._config(config)
        _, _, environment = settings.resolved()
        async with settings.client() as client:
            try:
                await client._get_environment(environment)
            except NotFound:
                if settings.create_environment is None:
                    raise ValueError(
                        f"Sandlot has no environment {environment!r} (create_environment: ...)"
                    ) from None
                fields = {"images": [settings.image] if settings.image else [], **settings.create_environment}
                with contextlib.suppress(Conflict):  # made meanwhile, by another task
                    await client.create_environment(environment, fields.pop("images"), **fields)

    @override
    @classmethod
    async def sample_init(
        cls, task_name: str, config: SandboxEnvironmentConfigType | None, metadata: dict[str, str]
    ) -> dict[str, SandboxEnvironment]:
        settings = cls._config(config)
        _, _, environment = settings.resolved()
        client = settings.client()
        try:
            session = await client.start_session(environment, image=settings.image)
            workspace = await _workspace(client, session)
        except BaseException:
            await client.close()
            raise
        return {"default": cls(client, session, workspace, settings.exec_timeout)}

    @override
    @classmethod
    async def sample_cleanup(
        cls,
        task_name: str,
        config: SandboxEnvironmentConfigType | None,
        environments: dict[str, SandboxEnvironment],
        interrupted: bool,
    ) -> None:
        for environment in environments.values():
            sandbox = environment.as_type(SandlotSandboxEnvironment)
            try:
                if sandbox.session.status in ("active", "suspended"):
                    await sandbox.session.end()
            except (NotFound, Conflict):
                pass  # ended already (its sandbox was lost, or it expired)
            finally:
                await sandbox.client.close()

    @override
    def default_polling_interval(self) -> float:
        return 0.2

    # -- commands ----------------------------------------------------------------------------

    @override
    async def exec(
        self,
        cmd: list[str],
        input: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
        timeout: int | None = None,
        timeout_retry: bool = True,
        concurrency: bool = True,
    ) -> ExecResult[str]:
        try:
            result = await self.session.shell.exec(
                cmd, cwd=cwd, env=env, stdin=input, timeout=timeout or self._exec_timeout, user=user
            )
        except (NotPermitted, InvalidInput) as exc:
            if user is not None and exc.body.get("field") == "user":
                raise SandboxUserUnsupportedError(f"cannot run as {user!r} here: {exc.message}") from exc
            raise
        except (*_UNAVAILABLE, Conflict) as exc:
            raise SandboxUnavailableError(f"the Sandlot sandbox cannot run commands: {exc}") from exc
        return _result(cmd, result, timeout)

    # -- files -------------------------------------------------------------------------------

    @override
    async def write_file(self, file: str, contents: str | bytes) -> None:
        data = contents.encode("utf-8") if isinstance(contents, str) else contents
        try:
            await self.files.write(file, data)
        except (*_UNAVAILABLE, Conflict) as exc:
            raise SandboxUnavailableError(f"the Sandlot sandbox is not available: {exc}") from exc

    @overload
    async def read_file(self, file: str, text: Literal[True] = True) -> str: ...

    @overload
    async def read_file(self, file: str, text: Literal[False]) -> bytes: ...

    @override
    async def read_file(self, file: str, text: bool = True) -> str | bytes:
        if posixpath.basename(file.rstrip("/")) in (".", ".."):
            raise IsADirectoryError(21, "Is a directory", file)
        try:
            data = await self.files.read(file)
        except (*_UNAVAILABLE, Conflict) as exc:
            raise SandboxUnavailableError(f"the Sandlot sandbox is not available: {exc}") from exc
        return data.decode("utf-8") if text else data  # UnicodeDecodeError for text that is not


async def _workspace(client: AsyncSandlot, session: AsyncSession) -> str:
    """Where the session's sandbox keeps its workspace (relative paths start there)."""
    try:
        box = await client.call("GET", f"/v1/sandboxes/{session.sandbox_id}")
    except NotPermitted:  # a key that may not read sandboxes: the service's only workspace
        return "/workspace"
    return str(box.get("workspace") or "/workspace")


def _result(cmd: list[str], result: dict[str, Any], timeout: int | None) -> ExecResult[str]:
    """An exec's answer as inspect's result, or the error inspect expects instead."""
    out, err = (part.decode("utf-8", errors="replace") for part in output_bytes(result))
    if result.get("timed_out"):
        error = TimeoutError(f"Command timed out after {timeout} seconds")
        if out or err:
            error.truncated_output = out + err  # type: ignore[attr-defined]
        raise error
    limit = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE
    if result.get("truncated") or max(len(out), len(err)) > limit:
        limit_str = SandboxEnvironmentLimits.MAX_EXEC_OUTPUT_SIZE_STR
        if result.get("truncated") and max(len(out), len(err)) <= limit:
            limit_str = "the service's exec_output_limit"
        raise OutputLimitExceededError(limit_str, (out or err)[-limit:])
    code = result.get("exit_code")
    code = -1 if code is None else int(code)
    lines = err.strip().splitlines()
    # the service's wrapper could not exec the command (one line naming it, exit 126)
    named = len(lines) == 1 and bool(cmd) and cmd[0] in lines[0]
    if code == 126 and not out and named and "permission denied" in lines[0].casefold():
        raise PermissionError(f"Permission denied executing command: {lines[0]}")
    return ExecResult(success=code == 0, returncode=code, stdout=out, stderr=err)
