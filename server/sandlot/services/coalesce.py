"""Concurrent lookups of the same thing share one: a burst of requests with the same key (or
for the same environment) arriving while its cache entry is stale makes one read, not one
read (and, past the connection pool, one new connection) each."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Coalesced"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _retrieve(flight: asyncio.Future[object]) -> None:
    """Mark a failed lookup's error as seen (every waiter may have been cancelled)."""
    if not flight.cancelled():
        flight.exception()


class Coalesced(Generic[K, V]):
    """``await get(key, load)``: runs ``load()`` unless a lookup of ``key`` is already under
    way, in which case it waits for that one's result (or error). Only lookups in flight are
    shared: nothing is kept once one ends (the callers keep their own caches)."""

    def __init__(self) -> None:
        self._flights: dict[K, asyncio.Future[V]] = {}

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        flight = self._flights.get(key)
        if flight is None:
            flight = asyncio.ensure_future(load())
            self._flights[key] = flight
            flight.add_done_callback(lambda done: self._end(key, done))
        # a waiter that is cancelled leaves the lookup running for the others
        return await asyncio.shield(flight)

    def forget(self) -> None:
        """Lookups from now on start afresh (what changed may have been read already by those
        under way, which still answer their own waiters)."""
        self._flights.clear()

    def _end(self, key: K, flight: asyncio.Future[V]) -> None:
        if self._flights.get(key) is flight:
            del self._flights[key]
        _retrieve(flight)  # type: ignore[arg-type]
