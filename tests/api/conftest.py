"""Fixtures for the programmatic ways in (/v1, /api/, webhooks): one real app server for the
package (``manage.py serve``, with the distributed worker and runner in that mode), started
with short keep-alive and webhook retry intervals so the tests need not wait for minutes."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import run_app_server

KEEPALIVE_SECONDS = 0.5
# Webhook retries a moment apart, not minutes: set before any process of the session starts
# (the distributed worker that delivers them is shared), read by them at start.
RETRY_ENV = {"WEBHOOK_RETRY_BASE_SECONDS": "0.2", "WEBHOOK_RETRY_MAX_SECONDS": "1"}
for _name, _value in RETRY_ENV.items():
    os.environ.setdefault(_name, _value)


@pytest.fixture(scope="session")
def api_server(django_db_setup: Any, worker_process: Any) -> Iterator[str]:
    with run_app_server(
        "--no-beat",
        log_name="test-server-api.log",
        API_STREAM_KEEPALIVE_SECONDS=str(KEEPALIVE_SECONDS),
    ) as url:
        yield url


@pytest.fixture
def raw_token(user: Any) -> str:
    from platform_app.api_tokens import api_token_create

    return api_token_create(user=user, name="sdk")[1]


def token_for(user: Any, **options: Any) -> str:
    from platform_app.api_tokens import api_token_create

    return api_token_create(user=user, name=options.pop("name", "client"), **options)[1]
