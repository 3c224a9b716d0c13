"""Small helpers shared by the tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def wait_for(
    predicate: Callable[[], T],
    *,
    timeout: float = 10.0,
    interval: float = 0.02,
    message: str = "condition",
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test on timeout."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout} s waiting for {message} (last value: {last!r})")


def require(condition: bool, reason: str) -> None:
    """A missing service fails the test under CI=true; elsewhere it skips."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"required service missing under CI=true: {reason}")
    pytest.skip(reason)
