"""Timeout and cancel kill the whole process tree, and nothing from a call outlives it."""

from __future__ import annotations

import random
import threading
import time

import pytest

from tests.sandbox import ALL
from tests.sandbox.conftest import Box

pytestmark = pytest.mark.parametrize("box", ALL, indirect=True)


def _marker() -> str:
    # A sleep duration nobody else uses, to find our processes in `ps` / `pgrep`.
    return f"{random.randint(1000, 9999)}.{random.randint(100, 999)}"


def test_it_kills_the_whole_tree_on_timeout(box: Box) -> None:
    marker = _marker()
    started = time.monotonic()
    result = box.sh(f"echo started; sleep {marker} & sleep {marker} & wait", timeout=1)
    elapsed = time.monotonic() - started
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.killed_reason == "timeout"
    assert result.stdout == "started\n", "output produced before the timeout is kept"
    assert elapsed < 3.0
    assert box.wait_until_gone(marker, result.sandbox_id) == []


def test_it_cancels_within_a_second(box: Box) -> None:
    marker = _marker()
    cancel = threading.Event()
    timer = threading.Timer(0.3, cancel.set)
    timer.start()
    started = time.monotonic()
    result = box.sh(f"sleep {marker} & sleep {marker}", cancel=cancel, timeout=30)
    elapsed = time.monotonic() - started
    timer.cancel()
    assert result.cancelled is True
    assert result.timed_out is False
    assert result.exit_code is None
    assert result.killed_reason == "cancelled"
    assert elapsed < 1.3
    assert box.wait_until_gone(marker, result.sandbox_id) == []


def test_it_cleans_up_background_children_after_a_normal_exit(box: Box) -> None:
    marker = _marker()
    started = time.monotonic()
    result = box.sh(f"sleep {marker} & echo done")
    assert (result.exit_code, result.stdout) == (0, "done\n")
    assert time.monotonic() - started < 2.0, "a background child held the call open"
    assert box.wait_until_gone(marker, result.sandbox_id) == []


def test_it_is_usable_right_after_a_kill(box: Box) -> None:
    assert box.sh("sleep 30", timeout=0.5).timed_out
    assert box.run("echo", "ok").stdout == "ok\n"
