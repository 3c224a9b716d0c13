"""Liveness for exec probes, apart from readiness: each long-running process touches a file of
its own in this container's temporary directory from the loop that does its work (the runner
once its event loop answered, a worker's or beat's heartbeat thread), before it writes to the
database. ``manage.py health --kind K --live`` then says "a process of kind K here is turning"
without touching the database or the broker, so a database outage makes every process unready
(``health --kind K``) but restarts none (Kubernetes restarts on liveness only).
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from django.conf import settings


def alive_dir() -> Path:
    """``LIVENESS_DIR``: this container's own (never a shared directory)."""
    return Path(settings.LIVENESS_DIR)


def _file(key: str, pid: int) -> Path:
    return alive_dir() / f"{key.replace('/', '_')}.{pid}"


def touch(key: str) -> None:
    """This process, of kind ``key`` (``runner``, ``worker:tools``, ``beat``…), is turning."""
    path = _file(key, os.getpid())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:
        pass  # a read-only /tmp: the probe then says so (no fresh file)


def remove(key: str) -> None:
    with contextlib.suppress(OSError):
        _file(key, os.getpid()).unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fresh(key: str, within: float) -> list[int]:
    """The pids of running processes of ``key`` whose file is younger than ``within`` s."""
    now = time.time()
    found = []
    for path in alive_dir().glob(f"{key.replace('/', '_')}.*"):
        pid_text = path.name.rsplit(".", 1)[1]
        if not pid_text.isdigit():
            continue
        try:
            age = now - path.stat().st_mtime
        except OSError:
            continue
        if age <= within and _running(int(pid_text)):
            found.append(int(pid_text))
    return sorted(found)
