"""Where this process's Prometheus metrics live, decided before ``prometheus_client`` loads.

prometheus-client picks its storage when it is first imported: with ``PROMETHEUS_MULTIPROC_DIR``
set, every value is kept in memory-mapped files there, one set per process id, and a scrape
adds up the files of every process that wrote into the directory. That is what a prefork
Celery worker needs (its tool calls run in child processes; the parent serves the port), so
``controlcenter/__init__.py`` calls ``metrics_dir_prepare()`` first thing in every process.

Each process that starts (not a fork) gets a directory of its own, so two processes started
from one shell, or a test run's processes started from pytest, never add up each other's
counts; the process's forked children share it. An operator who sets
``PROMETHEUS_MULTIPROC_DIR`` themselves keeps it. The directory is removed when the process
that made it exits.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile

OWNER = "CC_METRICS_DIR_OWNER"  # the pid that made the directory named in the variable
VARIABLE = "PROMETHEUS_MULTIPROC_DIR"


def metrics_dir_prepare() -> str:
    """Set ``PROMETHEUS_MULTIPROC_DIR`` for this process (idempotent); return it."""
    current = os.environ.get(VARIABLE, "")
    owner = os.environ.get(OWNER, "")
    if current and not owner:
        return current  # the operator's own
    if current and owner == str(os.getpid()):
        return current  # made already by this process
    # Unset, or inherited from the process that started this one: a directory of our own.
    path = tempfile.mkdtemp(prefix="cc-metrics-")
    os.environ[VARIABLE] = path
    os.environ[OWNER] = str(os.getpid())
    pid = os.getpid()

    def remove() -> None:
        if os.getpid() == pid:  # not from a forked child that exits
            with contextlib.suppress(OSError):
                shutil.rmtree(path)

    atexit.register(remove)
    return path
