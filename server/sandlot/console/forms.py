"""What the console's actions share: a failure the page reports instead of an error page."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from pydantic import ValidationError

from sandlot.domain.errors import NotFound, SandlotError

__all__ = ["Outcome", "problem", "reported"]


def problem(exc: Exception) -> str:
    """One line saying what was wrong (every field of a validation error)."""
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return exc.message if isinstance(exc, SandlotError) else str(exc)


@dataclass(slots=True)
class Outcome:
    error: str | None = None


@contextmanager
def reported() -> Iterator[Outcome]:
    """Run an action whose failure the page shows as a message (``outcome.error``): bad input,
    a refused action, an engine away. A 404 (another tenant's object, or gone) stays the 404 a
    page gets, so no message ever tells another tenant's objects apart."""
    outcome = Outcome()
    try:
        yield outcome
    except NotFound:
        raise
    except (SandlotError, ValidationError) as exc:
        outcome.error = problem(exc)
