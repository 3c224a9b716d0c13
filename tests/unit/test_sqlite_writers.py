"""SQLite with many writer threads (embedded mode), on Django's own backend: WAL, a busy
timeout, and immediate transactions (``OPTIONS["transaction_mode"]``), so an atomic block
takes the write lock when it begins and never meets "database is locked" halfway."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection, transaction

# Unmarked: the embedded pass only, where the database is SQLite.


@pytest.fixture
def table(transactional_db: None) -> Iterator[str]:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS cc_writers (id INTEGER PRIMARY KEY, v INT)")
    yield "cc_writers"
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE cc_writers")


def in_thread(fn: Any, errors: list[BaseException] | None = None) -> threading.Thread:
    def run() -> None:
        try:
            fn()
        except BaseException as exc:
            if errors is None:
                raise
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def insert(value: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO cc_writers (v) VALUES (%s)", [value])


def stored() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT v FROM cc_writers ORDER BY id")
        return [v for (v,) in cursor.fetchall()]


def test_it_runs_on_djangos_own_backend_with_immediate_transactions(table: str) -> None:
    assert connection.settings_dict["ENGINE"] == "django.db.backends.sqlite3"
    assert connection.transaction_mode == "IMMEDIATE"
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"
        cursor.execute("PRAGMA busy_timeout")
        assert cursor.fetchone()[0] >= 10_000  # ms: a writer waits for the lock


def test_a_block_holds_the_writers_from_its_start_to_its_commit(table: str) -> None:
    begun, release = threading.Event(), threading.Event()
    done: list[str] = []

    def block() -> None:
        with transaction.atomic():
            begun.set()
            release.wait(5)
            insert(1)
            done.append("block")

    def writer() -> None:
        insert(2)
        done.append("writer")

    first = in_thread(block)
    assert begun.wait(5)
    second = in_thread(writer)
    time.sleep(0.3)
    assert done == []  # the writer waits for the block's commit
    release.set()
    first.join(5)
    second.join(5)
    assert done == ["block", "writer"]
    assert stored() == [1, 2]


def test_blocks_that_read_then_write_at_once_all_commit(table: str) -> None:
    """The case a deferred transaction fails: it reads (a snapshot), another writer commits,
    then its write cannot be applied to that snapshot and SQLite answers "database is locked"
    at once, whatever the busy timeout."""
    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def block(value: int) -> None:
        start.wait(5)
        with transaction.atomic():
            count = len(stored())
            time.sleep(0.05)  # the others try to write meanwhile
            insert(value * 100 + count)

    threads = [in_thread(lambda v=v: block(v), errors) for v in range(4)]
    for thread in threads:
        thread.join(10)
    assert errors == []
    # Each block saw the rows of those before it: one after another, never interleaved.
    assert sorted(v % 100 for v in stored()) == [0, 1, 2, 3]


def test_a_block_that_runs_no_statement_commits_and_holds_nothing(table: str) -> None:
    with transaction.atomic():
        transaction.on_commit(lambda: None)
    thread = in_thread(lambda: insert(3))
    thread.join(5)
    assert not thread.is_alive()
    with pytest.raises(RuntimeError), transaction.atomic():
        raise RuntimeError("rolled back before any statement")
    insert(4)
    assert stored() == [3, 4]
