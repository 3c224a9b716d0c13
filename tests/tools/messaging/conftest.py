"""Fixtures of the messaging tests."""

from tests.tools.http.conftest import fake_dns  # noqa: F401  (fixture)
