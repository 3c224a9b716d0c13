"""glibc's malloc arenas in a process of many threads (issue 38, memory).

glibc gives threads that allocate at the same time arenas of their own, up to 8 per core,
and memory freed in one arena is not reused by another, so a server of many threads (Daphne,
the runner, the tools worker, a thread per request) keeps more RSS after a load than it uses.
``serve`` caps them (``SERVE_MALLOC_ARENAS``, default 2): after 2,000 turns, 100 at once,
242.2 MiB against 251.4 with glibc's default, and the same wall time (``bench/memory.py``;
bench/HISTORY.md).
"""

from __future__ import annotations

import ctypes
import os

_M_ARENA_MAX = -8  # mallopt's parameter, from glibc's malloc.h


def malloc_arenas_limit(arenas: int) -> bool:
    """At most ``arenas`` malloc arenas for this process from now on (call it before the
    threads start), unless ``MALLOC_ARENA_MAX`` already decided. False where the C library
    has no ``mallopt`` (not glibc) or refused."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(_M_ARENA_MAX, arenas))
