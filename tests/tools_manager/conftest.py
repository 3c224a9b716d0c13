"""Fixtures for the Tools Manager tests. The e2e fixtures (app server, Chromium) are reused
from tests/e2e so these pages run against the same real server and worker."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.e2e.conftest import app_server, browser, page  # noqa: F401  (fixtures)
from tests.tools.research.conftest import _tavily_server, tavily  # noqa: F401  (fixtures)


@pytest.fixture
def staff_client(staff_user: Any) -> Client:
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def user_client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


HTMX = {"HTTP_HX_REQUEST": "true"}
