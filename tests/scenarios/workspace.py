"""A conversation with a sandbox of its own, and ways to look into that sandbox from a test.

Sandbox containers are named after the workspace id (``c<conversation id>``) and share one
Docker engine with every other test run and app on this machine, which all start counting
conversations at 1. A conversation id drawn at random keeps a test's container its own.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings


@contextlib.contextmanager
def isolated_conversation(user: Any, title: str = "Scenario") -> Iterator[Any]:
    from chat_app.models import Conversation

    conversation = Conversation.objects.create(
        pk=random.randint(10**6, 2 * 10**9), owner=user, title=title
    )
    try:
        warm_sandbox(f"c{conversation.pk}")
        yield conversation
    finally:
        release_sandbox(f"c{conversation.pk}")
        shutil.rmtree(workspace_of(conversation), ignore_errors=True)


def workspace_of(conversation: Any) -> Path:
    return Path(settings.WORKSPACES_DIR) / f"c{conversation.pk}"


def sandbox_name() -> str:
    """The backend ``auto`` picks here, as the worker (same host, same settings) does."""
    from tools_app.sandbox import get_sandbox

    return get_sandbox().name


def warm_sandbox(workspace_id: str, attempts: int = 3) -> None:
    """Start the workspace's container before the test, so the test does not depend on its
    creation: another process's maintenance pass may remove a container between its create
    and start (see test_shared_engine.py), and the first call would then fail."""
    from tools_app.runtime import workspace_dir_for
    from tools_app.sandbox import ExecRequest, SandboxError, get_sandbox

    sandbox = get_sandbox()
    if sandbox.name != "docker":
        return
    for _ in range(attempts):
        with contextlib.suppress(SandboxError):
            request = ExecRequest(argv=["true"], timeout=30)
            if sandbox.exec(workspace_id, workspace_dir_for(workspace_id), request).ok:
                return
        sandbox.pool.forget(workspace_id, False)  # type: ignore[attr-defined]
        time.sleep(0.2)


def release_sandbox(workspace_id: str) -> None:
    from tools_app.sandbox import SandboxError, get_sandbox

    with contextlib.suppress(SandboxError):
        get_sandbox().release(workspace_id)


def git(workspace: Path, *args: str) -> str:
    """git on the host, in a workspace the sandbox uid owns."""
    return subprocess.run(
        ["git", "-C", str(workspace), "-c", "safe.directory=*", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def _run(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=False).stdout


def sandbox_processes(conversation: Any, marker: str) -> list[str]:
    """Command lines containing ``marker`` still running in the conversation's sandbox: ``ps``
    inside its containers (found by their workspace label) for docker; for bubblewrap, whose
    processes the host sees, ``pgrep`` (so ``marker`` should be unique to the test)."""
    if sandbox_name() == "docker":
        label = f"controlcenter.workspace=c{conversation.pk}"
        lines = []
        for cid in _run("docker", "ps", "-q", "--filter", f"label={label}").split():
            lines += _run("docker", "exec", cid, "ps", "-eo", "pid,args").splitlines()
    else:
        lines = _run("pgrep", "-af", marker).splitlines()
    return [line for line in lines if marker in line and "pgrep" not in line]
