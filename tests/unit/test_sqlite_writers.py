"""SQLite's writers queue on a lock in this process (infra/db/sqlite3): an atomic block
holds it from its first statement to its commit, not from the moment it is entered."""

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


def in_thread(fn: Any) -> threading.Thread:
    def run() -> None:
        try:
            fn()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def insert(value: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO cc_writers (v) VALUES (%s)", [value])


def test_python_before_a_blocks_first_statement_holds_no_writer_back(table: str) -> None:
    entered, release = threading.Event(), threading.Event()

    def block() -> None:
        with transaction.atomic():
            entered.set()
            release.wait(5)  # Python only: no statement yet
            insert(1)

    thread = in_thread(block)
    assert entered.wait(5)
    started = time.monotonic()
    insert(2)  # another writer goes on at once
    waited = time.monotonic() - started
    release.set()
    thread.join(5)
    assert waited < 1.0, f"the writer waited {waited:.1f} s for a block that wrote nothing yet"
    with connection.cursor() as cursor:
        cursor.execute("SELECT v FROM cc_writers ORDER BY id")
        assert [v for (v,) in cursor.fetchall()] == [2, 1]


def test_a_block_holds_the_writers_from_its_first_statement_to_its_commit(table: str) -> None:
    begun, release = threading.Event(), threading.Event()
    done: list[str] = []

    def block() -> None:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT COUNT(*) FROM cc_writers")  # a read begins it too
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


def test_a_block_that_runs_no_statement_commits_and_holds_nothing(table: str) -> None:
    with transaction.atomic():
        transaction.on_commit(lambda: None)
    thread = in_thread(lambda: insert(3))
    thread.join(5)
    assert not thread.is_alive()
    with pytest.raises(RuntimeError), transaction.atomic():
        raise RuntimeError("rolled back before any statement")
    insert(4)
    with connection.cursor() as cursor:
        cursor.execute("SELECT v FROM cc_writers ORDER BY id")
        assert [v for (v,) in cursor.fetchall()] == [3, 4]
