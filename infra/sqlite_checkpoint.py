"""SQLite's WAL checkpoints off the write path (embedded mode).

In WAL mode a commit appends its pages to ``db.sqlite3-wal``; a *checkpoint* copies them back
into the database file and syncs it. By default the commit that takes the WAL past 1,000 pages
runs that checkpoint itself, and waits for the copy and the ``fsync``. SQLite's documentation
names the remedy: checkpoint from another thread. Each process that opens the database runs
one daemon thread that makes a PASSIVE checkpoint every ``SQLITE_CHECKPOINT_INTERVAL`` seconds
(PASSIVE never waits for a lock and never holds a writer back); its connections keep the
automatic checkpoint only as a net, at ``SQLITE_AUTOCHECKPOINT_PAGES``, should the thread fall
behind. The thread opens the file for each pass (``mode=rw``: it never creates one), so a
database deleted and made again under the same name (tests, benches) is the one it checkpoints.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

THREAD_NAME = "cc-sqlite-checkpoint"
_lock = threading.Lock()
_running: set[tuple[int, str]] = set()  # (process id, database path): a forked child starts its own


def _new_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it when the process forked


os.register_at_fork(after_in_child=_new_lock_after_fork)


def checkpoint_once(path: str) -> tuple[int, int, int] | None:
    """One PASSIVE checkpoint of the database at ``path``: SQLite's (busy, WAL frames, frames
    copied), or None when there is no such database now."""
    if not Path(path).exists():
        return None
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=0, isolation_level=None)
    try:
        row = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    finally:
        conn.close()
    return (int(row[0]), int(row[1]), int(row[2])) if row else None


def wal_checkpointer_start(path: str, *, interval: float) -> bool:
    """Start this process's checkpoint thread for the database file at ``path``, once per
    process and path; False when one already runs. The thread ends when the file is gone."""
    key = (os.getpid(), str(Path(path).resolve()))
    with _lock:
        if key in _running:
            return False
        _running.add(key)
    name = f"{THREAD_NAME} {key[1]}"
    threading.Thread(target=_loop, args=(key, interval), name=name, daemon=True).start()
    return True


def _loop(key: tuple[int, str], interval: float) -> None:
    failures = 0
    try:
        while True:
            time.sleep(interval)
            try:
                if checkpoint_once(key[1]) is None:
                    return  # deleted (a test database): a new connection starts a new thread
                failures = 0
            except sqlite3.Error as exc:  # the file is being replaced, say: the next pass will do
                failures += 1
                if failures == 10:  # said once; the connections' own checkpoints still run
                    logger.warning(
                        "background WAL checkpoints of %s keep failing (%s)", key[1], exc
                    )
    finally:
        with _lock:
            _running.discard(key)


def on_connection_created(sender: Any, connection: Any, **kwargs: Any) -> None:
    """``connection_created`` receiver: a SQLite database file is checkpointed in the
    background (its connections' own net is set in the settings' ``init_command``)."""
    if connection.vendor != "sqlite":
        return
    from django.conf import settings

    interval = settings.SQLITE_CHECKPOINT_INTERVAL
    name = str(connection.settings_dict.get("NAME") or "")
    if interval <= 0 or not name or name == ":memory:" or name.startswith("file:"):
        return  # off, or no file: SQLite's own automatic checkpoints, as it ships
    wal_checkpointer_start(name, interval=interval)
