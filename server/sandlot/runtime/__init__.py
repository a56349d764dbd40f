"""Sandbox runtimes: where sandboxes actually run (Docker engine, or local directories)."""

from sandlot.runtime.base import (
    ExecRequest,
    ExecResult,
    Limits,
    OwnedSandbox,
    SandboxRuntime,
    SandboxSpec,
)

__all__ = ["ExecRequest", "ExecResult", "Limits", "OwnedSandbox", "SandboxRuntime", "SandboxSpec"]
