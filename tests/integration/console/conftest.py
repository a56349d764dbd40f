"""Fixtures of the console's tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from litestar.testing import AsyncTestClient

from sandlot.app import create_app
from sandlot.settings import Settings


@pytest.fixture
async def browser(app_settings: Settings) -> AsyncIterator[AsyncTestClient]:
    """A client of its own (its own cookie jar), like one browser."""
    async with AsyncTestClient(create_app(app_settings), timeout=60) as client:
        yield client
