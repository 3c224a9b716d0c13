"""Database connections across ``fork()``.

Celery's prefork pool forks worker children from a parent that may already hold database
connections and, in distributed mode, a psycopg connection pool (whose housekeeping threads do
not survive a fork). A child that used or closed them would talk on sockets it shares with its
parent and break the parent's connections. After a fork the child forgets them without any
network I/O — the objects are kept referenced so no finaliser ever runs on them — and opens
its own on first use.
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any

_inherited: list[Any] = []  # never closed in the child: the parent owns those sockets
_registered = threading.Event()


def _forget_inherited_connections() -> None:
    try:
        from django.db import connections
    except Exception:  # Django not set up in this process: nothing inherited
        return
    pools: dict[str, Any] = {}
    with contextlib.suppress(Exception):  # psycopg missing: no pools either
        from django.db.backends.postgresql.base import DatabaseWrapper

        pools = getattr(DatabaseWrapper, "_connection_pools", {})
    if pools:
        _inherited.append(dict(pools))
        pools.clear()
    for conn in connections.all(initialized_only=True):
        if conn.connection is not None:
            _inherited.append(conn.connection)
            conn.connection = None


def register_db_fork_safety() -> None:
    if not _registered.is_set():
        _registered.set()
        os.register_at_fork(after_in_child=_forget_inherited_connections)
