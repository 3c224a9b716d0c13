"""Fixtures for the policy tests (the organisation: ``tests.policy.history``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.policy.history import org_make


@pytest.fixture
def org(db: None) -> dict[str, Any]:
    return org_make()
