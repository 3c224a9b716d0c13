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


def logged_in(user: Any) -> Any:
    """A Django test client signed in as ``user``."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


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


def signed_in(comm: Any, user: Any) -> Any:
    """Give a websocket communicator the scope a signed-in browser has: the user and a real
    session (``AuthMiddlewareStack`` puts both there). Every frame is checked against the
    session again (``infra.access.principal_current``), so a scope without one is refused."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.utils.module_loading import import_string

    comm.scope["user"] = user
    if getattr(user, "is_authenticated", False):
        session = import_string(f"{settings.SESSION_ENGINE}.SessionStore")()
        session[SESSION_KEY] = str(user.pk)
        session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.save()
        comm.scope["session"] = session
    return comm


def settings_in(var_dir: Any, show: str = "settings.SECRET_KEY", **env: str) -> Any:
    """Load the settings in a fresh process (no key, no Redis, no database from this one's
    environment; ``env`` added) and print ``show`` (its SECRET_KEY): how a process starts
    with them."""
    import subprocess
    import sys
    from pathlib import Path

    dropped = ("SECRET_KEY", "SECRET_KEY_FILE", "REDIS_URL", "DATABASE_URL")
    environment = {k: v for k, v in os.environ.items() if k not in dropped}
    environment.update(CC_VAR_DIR=str(var_dir), **env)
    return subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django; django.setup(); from django.conf import settings; print({show})",
        ],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
        env=environment,
        check=False,
    )


# The guard and filter settings every tool group has (GroupSettings), as a settings form posts
# their defaults: tests that post a group's form whole add them.
GUARD_FORM_DEFAULTS = {
    "guard_secrets_arguments": "approval",
    "guard_secrets_result": "redact",
    "guard_pii_arguments": "allow",
    "guard_pii_result": "allow",
    "filter_url": "",
    "filter_secret": "",
    "filter_timeout_seconds": "5",
    "filter_on_failure": "closed",
    "filter_private_hosts": "",
}
GUARD_FORM_KINDS = {
    "guard_secrets_arguments": "choice",
    "guard_secrets_result": "choice",
    "guard_pii_arguments": "choice",
    "guard_pii_result": "choice",
    "filter_url": "text",
    "filter_secret": "secret",
    "filter_timeout_seconds": "integer",
    "filter_on_failure": "choice",
    "filter_private_hosts": "lines",
}
