"""Small helpers shared by the tests."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, TypeVar

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


def data_of(text: str) -> str:
    """What stands between the untrusted-data markers of ``text`` (tools_app.untrusted)."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("<<untrusted-data id="))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("<<end-untrusted-data"))
    return "\n".join(lines[start + 1 : end])


def tool_json(text: str) -> Any:
    """A native tool message's result, unwrapped from its untrusted-data markers."""
    import json

    return json.loads(data_of(text))
