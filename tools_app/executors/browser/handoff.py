"""A conversation's browser state on disk, so any worker process can carry on where another
stopped: the current URL and the cookies (never localStorage/sessionStorage, which stay
inside the process that holds the context).

Why: with Celery's prefork pool (the distributed default) consecutive calls of one
conversation land in different child processes, each with its own Chromium. Every call ends
by saving ``{seq, url, cookies}``; a process whose context is older than the file (another
process acted since) rebuilds the context from it and reopens the URL. Within one process the
sequence numbers match and the file is only written, never read back into the browser.

Files live in ``VAR_DIR/browser/sessions/<workspace id>.json`` (mode 0600, outside the
workspace, so sandboxed tools of the conversation cannot read or forge them) and are swept
after the same idle time as contexts. Several machines share state only if they share
``VAR_DIR``; otherwise route a conversation's browser calls to one worker.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from pathlib import Path
from typing import Any

from django.conf import settings

logger = logging.getLogger(__name__)

# A context idle this long is closed, and its hand-off state swept. Here rather than in
# pool.py so the maintenance sweep does not load Playwright (~18 MiB) in a process that never
# opened a browser.
CONTEXT_IDLE_SECONDS = 600.0

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,100}$")


def sessions_dir() -> Path:
    return Path(settings.VAR_DIR) / "browser" / "sessions"


def _path(key: str) -> Path:
    if not _KEY.match(key):
        raise ValueError(f"invalid browser session key {key!r}")
    return sessions_dir() / f"{key}.json"


def load(key: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_path(key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("seq"), int):
        return None
    return data


def save(key: str, *, seq: int, url: str, cookies: list[dict[str, Any]]) -> None:
    path = _path(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump({"seq": seq, "url": url, "cookies": cookies, "saved_at": time.time()}, fh)
        os.replace(tmp, path)
    except OSError as exc:  # the call itself succeeded; only hand-over suffers
        logger.warning("could not save browser state of %s: %s", key, exc)


def forget(key: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        _path(key).unlink()


def sweep(max_age: float) -> int:
    """Delete states not written for ``max_age`` seconds; returns how many."""
    removed = 0
    limit = time.time() - max_age
    try:
        entries = list(sessions_dir().glob("*.json"))
    except OSError:
        return 0
    for entry in entries:
        with contextlib.suppress(OSError):
            if entry.stat().st_mtime < limit:
                entry.unlink()
                removed += 1
    return removed
