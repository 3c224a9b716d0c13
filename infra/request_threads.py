"""The database connection of an ASGI request's thread, closed with the request.

Django runs a request's sync code in a thread of its own (``ThreadSensitiveContext``: one
executor per request), and that thread ends with the request. A persistent connection
(``CONN_MAX_AGE = None``: SQLite in embedded mode) opened there is not closed by Django; it
waits for the garbage collector with its page cache and file handles. After 100 people opened
their conversation page at once the embedded server held 70 SQLite connections for 28 threads,
and more after every wave (``bench/memory.py``). ``serve`` connects this receiver.
"""

from __future__ import annotations

from typing import Any


def close_request_connections(sender: Any, **kwargs: Any) -> None:
    """``request_finished`` receiver: close this thread's connections (the request's thread,
    about to end). Django sends the signal from ``response.close()``, in that thread."""
    from django.db import connections

    connections.close_all()
