"""Attacks that once worked, kept here so they stay closed (issue 20 and later)."""

from __future__ import annotations

from tests.e2e.conftest import app_server, browser, page  # noqa: F401  (fixtures)
