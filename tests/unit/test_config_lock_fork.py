"""A tools worker's pool children are forked while the parent's threads may be reading the tool
configuration (its sandbox-orphans thread at worker_init). A child that inherited the
configuration lock held would hang on its first memo read: CI saw a call stuck in "running"
for 90 s. The child gets a lock of its own."""

from __future__ import annotations

import os

import pytest

from tools_app import selectors


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_the_lock_is_held_can_take_it() -> None:
    with selectors._lock:  # as another thread of the parent at the instant of the fork
        pid = os.fork()
        if pid == 0:  # the child: the inherited copy would be held for ever
            got = selectors._lock.acquire(timeout=5)
            os._exit(0 if got else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
