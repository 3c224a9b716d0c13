"""tracemalloc in a server, for ``bench/memory.py``.

Put on ``PYTHONPATH`` with ``BENCH_TRACEMALLOC_DIR`` set, Python imports it at startup (the
``site`` module's hook): it starts tracemalloc, and a thread watches that folder; for each
``<name>.request`` file it collects garbage, dumps a snapshot to ``<name>.snapshot`` and
deletes the request, so the bench can diff snapshots taken between loads.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc

_DIR = os.environ.get("BENCH_TRACEMALLOC_DIR", "")


def _watch() -> None:
    os.makedirs(_DIR, exist_ok=True)
    while True:
        time.sleep(0.2)
        for entry in os.listdir(_DIR):
            if entry.endswith(".request"):
                name = entry.removesuffix(".request")
                gc.collect()
                tracemalloc.take_snapshot().dump(os.path.join(_DIR, name + ".tmp"))
                os.replace(
                    os.path.join(_DIR, name + ".tmp"), os.path.join(_DIR, name + ".snapshot")
                )
                os.unlink(os.path.join(_DIR, entry))


if _DIR:
    tracemalloc.start(int(os.environ.get("BENCH_TRACEMALLOC_FRAMES", "1")))
    threading.Thread(target=_watch, daemon=True, name="bench-tracemalloc").start()
