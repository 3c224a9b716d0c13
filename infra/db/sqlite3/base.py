"""SQLite for a process with many threads: its writers queue on a lock, not in SQLite.

SQLite lets one connection write at a time. Another writer is told "busy" and sleeps in
SQLite's busy handler (1, 2, 5, 10 … 100 ms) before it tries again, however soon the lock is
free. In embedded mode dozens of turns write from the runner's threads, the worker's threads
and the web server at once; measured with 50 concurrent turns, those sleeps — not the writes —
made most of the turn time. Here the writers of one process take a Python lock first, which
wakes the next one the moment it is released; SQLite's busy timeout still covers writers in
other processes (a ``manage.py`` command, a test).

A write transaction (``BEGIN IMMEDIATE`` of an atomic block) holds the lock until it commits or
rolls back; a single write statement outside a transaction holds it for that statement. An
atomic block begins its transaction with its first statement, not on entry: whatever Python
runs before (building that statement through the ORM, say) does not hold the writers back.
Under load the lock, not the work, sets the pace, so every millisecond it is held counts.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db.backends.sqlite3 import base

_WRITERS = threading.RLock()
_READS = ("SELECT", "PRAGMA", "EXPLAIN", "WITH")  # WITH: Django's reads only


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_writers = False
    _begin_pending = False  # an atomic block was entered; its first statement begins it

    def _start_transaction_under_autocommit(self) -> None:
        self._begin_pending = True

    def _begin_now(self) -> None:
        self._begin_pending = False
        _WRITERS.acquire()
        self._holds_writers = True
        try:
            super()._start_transaction_under_autocommit()  # type: ignore[misc]  # not in the stubs
        except BaseException:
            self._release_writers()
            raise

    def _commit(self) -> Any:
        self._begin_pending = False
        try:
            return super()._commit()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _rollback(self) -> Any:
        self._begin_pending = False
        try:
            return super()._rollback()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _close(self) -> Any:
        self._begin_pending = False
        try:
            return super()._close()  # type: ignore[misc]  # not in the stubs
        finally:
            self._release_writers()

    def _release_writers(self) -> None:
        if self._holds_writers:
            self._holds_writers = False
            _WRITERS.release()

    def create_cursor(self, name: str | None = None) -> Any:
        cursor = self.connection.cursor(factory=CursorWrapper)
        cursor.cc_db = self
        return cursor


class CursorWrapper(base.SQLiteCursorWrapper):
    cc_db: DatabaseWrapper | None = None

    def execute(self, query: str, params: Any = None) -> Any:
        if self.cc_db is not None and self.cc_db._begin_pending:
            self.cc_db._begin_now()
        if self.connection.in_transaction or query.lstrip()[:7].upper().startswith(_READS):
            return super().execute(query, params)
        with _WRITERS:
            return super().execute(query, params)

    def executemany(self, query: str, param_list: Any) -> Any:
        if self.cc_db is not None and self.cc_db._begin_pending:
            self.cc_db._begin_now()
        if self.connection.in_transaction:
            return super().executemany(query, param_list)
        with _WRITERS:
            return super().executemany(query, param_list)
