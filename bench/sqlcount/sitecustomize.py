"""Counts the SQL statements a server runs, for ``bench/turn_cost.py``.

Put on ``PYTHONPATH`` with ``BENCH_SQL_COUNT_FILE`` set, Python imports it at startup (the
``site`` module's hook): every database connection Django opens gets an execute wrapper that
counts, and a thread writes the total to that file every 0.1 s. The same file is used for
both trees of an A/B run, so the count does not depend on either tree's code.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from typing import Any

_FILE = os.environ.get("BENCH_SQL_COUNT_FILE", "")
_LOG = os.environ.get("BENCH_SQL_LOG", "")  # every statement, to read what a turn runs

if _FILE:
    _count = itertools.count()
    _seen = [0]

    def _wrapper(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        _seen[0] = next(_count) + 1
        if _LOG:
            with open(_LOG, "a") as f:
                f.write(
                    f"{threading.current_thread().name[:14]:14} {' '.join(sql.split())[:230]}\n"
                )
        return execute(sql, params, many, context)

    def _attach(sender: Any, connection: Any, **kwargs: Any) -> None:
        if _wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(_wrapper)

    def _writer() -> None:
        last = -1
        while True:
            time.sleep(0.1)
            if _seen[0] != last:
                last = _seen[0]
                tmp = _FILE + ".tmp"
                with open(tmp, "w") as f:
                    f.write(str(last))
                os.replace(tmp, _FILE)

    try:
        from django.db.backends.signals import connection_created

        connection_created.connect(_attach, weak=False)
        threading.Thread(target=_writer, daemon=True, name="bench-sql-count").start()
    except ImportError:
        pass
