"""Background loops as objects with ``start()``/``stop()``, entered from the app lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

__all__ = ["PeriodicLoop"]

log = logging.getLogger(__name__)


class PeriodicLoop:
    """Calls ``work`` every ``interval`` seconds until stopped; a failing round is logged and
    the next one runs as usual."""

    def __init__(
        self, name: str, work: Callable[[], Awaitable[object]], interval: float, *, enabled: bool
    ) -> None:
        self.name = name
        self._work = work
        self.interval = interval
        self.enabled = enabled
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()

    async def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                await self._work()
            except Exception:
                log.exception("background loop %s failed a round", self.name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.interval)

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._stopping.clear()
            self._task = asyncio.create_task(self._run(), name=f"sandlot-{self.name}")

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stopping.set()
        try:
            await asyncio.wait_for(self._task, timeout=10)
        except TimeoutError:
            self._task.cancel()
        self._task = None
