"""Fixtures for the scenario tests. The browser scenario runs on the e2e suite's app server
and Chromium, so their fixtures are shared here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import app_server, browser, page  # noqa: F401
from tests.scenarios.workspace import isolated_conversation
from tests.tools.research.conftest import (  # noqa: F401  (the research scenario's servers)
    _pages_server,
    _searxng_server,
    _tavily_server,
    _victim_server,
    pages,
    searxng,
    tavily,
    victim,
)


@pytest.fixture
def dev_conversation(user: Any) -> Iterator[Any]:
    """A conversation whose sandbox and workspace are its own, removed afterwards."""
    with isolated_conversation(user) as conversation:
        yield conversation
