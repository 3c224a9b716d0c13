"""Embedded mode's WAL checkpoints run in a background thread, not in the commit that fills
the WAL (``infra.sqlite_checkpoint``)."""

from __future__ import annotations

import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from infra.sqlite_checkpoint import THREAD_NAME, checkpoint_once, wal_checkpointer_start

# Unmarked: the embedded pass only, where the database is SQLite.


def writer(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA wal_autocheckpoint=0")  # only the thread may checkpoint
    conn.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT)")
    return conn


def rows_in_the_database_file(path: Path) -> int:
    """Rows of ``t`` in the database file itself (a copy, without its WAL): only a
    checkpoint puts them there."""
    copy = path.with_name("copy.sqlite3")
    shutil.copyfile(path, copy)
    conn = sqlite3.connect(copy)
    try:
        return int(conn.execute("SELECT count(*) FROM t").fetchone()[0])
    except sqlite3.OperationalError:  # not even the table yet
        return 0
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{copy}{suffix}").unlink(missing_ok=True)


def test_it_checkpoints_the_wal_from_its_own_thread(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    conn = writer(path)
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"row {i}",) for i in range(200)])
    assert rows_in_the_database_file(path) == 0  # all in the WAL
    assert wal_checkpointer_start(str(path), interval=0.02)
    deadline = time.monotonic() + 10
    while rows_in_the_database_file(path) < 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert rows_in_the_database_file(path) == 200
    conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    thread = next(t for t in threading.enumerate() if t.name == f"{THREAD_NAME} {path.resolve()}")
    thread.join(timeout=10)  # the file is gone: so is its thread
    assert not thread.is_alive()


def test_without_it_the_rows_stay_in_the_wal(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    conn = writer(path)
    conn.executemany("INSERT INTO t (v) VALUES (?)", [(f"row {i}",) for i in range(200)])
    time.sleep(0.2)
    assert rows_in_the_database_file(path) == 0
    conn.close()


def test_it_starts_one_thread_per_database_and_process(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    writer(path).close()
    assert wal_checkpointer_start(str(path), interval=0.05)
    assert not wal_checkpointer_start(str(path), interval=0.05)
    assert not wal_checkpointer_start(str(tmp_path / "." / "db.sqlite3"), interval=0.05)
    name = f"{THREAD_NAME} {path.resolve()}"
    assert [t.name for t in threading.enumerate()].count(name) == 1
    path.unlink()


def test_it_never_creates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sqlite3"
    assert checkpoint_once(str(missing)) is None
    assert not missing.exists()


@pytest.mark.django_db
def test_django_connections_checkpoint_themselves_only_past_the_net() -> None:
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_autocheckpoint")
        (pages,) = cursor.fetchone()
    assert pages == settings.SQLITE_AUTOCHECKPOINT_PAGES
    database = Path(connection.settings_dict["NAME"]).resolve()
    names = {t.name for t in threading.enumerate()}
    assert f"{THREAD_NAME} {database}" in names
