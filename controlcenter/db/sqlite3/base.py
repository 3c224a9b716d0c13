"""SQLite for a process with many threads: its writers queue on a lock, not in SQLite.

SQLite lets one connection write at a time. Another writer is told "busy" and sleeps in
SQLite's busy handler (1, 2, 5, 10 … 100 ms) before it tries again, however soon the lock is
free. In embedded mode dozens of turns write from the runner's threads, the worker's threads
and the web server at once; measured with 50 concurrent turns, those sleeps — not the writes —
made most of the turn time. Here the writers of one process take a Python lock first, which
wakes the next one the moment it is released; SQLite's busy timeout still covers writers in
other processes (a ``manage.py`` command, a test).

A write transaction (``BEGIN IMMEDIATE`` of an atomic block) holds the lock until it commits or
rolls back; a single write statement outside a transaction holds it for that statement.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db.backends.sqlite3 import base

_WRITERS = threading.RLock()
_READS = ("SELECT", "PRAGMA", "EXPLAIN", "WITH")  # WITH: Django's reads only


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_writers = False

    def _start_transaction_under_autocommit(self) -> None:
        _WRITERS.acquire()
        self._holds_writers = True
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # not in the stubs
        except BaseException:
            self._release_writers()
            raise

    def _commit(self) -> Any:
        try:
            return super()._commit()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _rollback(self) -> Any:
        try:
            return super()._rollback()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _close(self) -> Any:
        try:
            return super()._close()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _release_writers(self) -> None:
        if self._holds_writers:
            self._holds_writers = False
            _WRITERS.release()

    def create_cursor(self, name: str | None = None) -> Any:
        return self.connection.cursor(factory=CursorWrapper)


class CursorWrapper(base.SQLiteCursorWrapper):
    def execute(self, query: str, params: Any = None) -> Any:
        if self.connection.in_transaction or query.lstrip()[:7].upper().startswith(_READS):
            return super().execute(query, params)
        with _WRITERS:
            return super().execute(query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        if self.connection.in_transaction:
            return super().executemany(query, param_list)
        with _WRITERS:
            return super().executemany(query, param_list)
