"""Log lines an operator's log system can index: ``LOG_FORMAT=json`` writes one JSON object per
line with the time, level, logger, message, this process's host, kind and pid, and the ids of
the work it was doing — ``turn``, ``call``, ``conversation`` — when the line was written
inside ``log_context`` (a tool call on a worker, a model round on a runner). The default
``plain`` format is unchanged, for people reading a terminal.

Python's own ``logging`` and ``json``: a formatter of thirty lines needs no library. The ids
ride on a ``contextvars.ContextVar``, so the runner's hundreds of rounds on one event loop
each keep their own (every asyncio task copies the context it was created in).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

_context: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "cc_log_context", default=None
)
_process = {"host": socket.gethostname(), "kind": "", "pid": os.getpid()}


def log_process_kind_set(kind: str) -> None:
    """What this process is (web, runner, worker, beat): in every JSON line."""
    _process["kind"] = kind


@contextlib.contextmanager
def log_context(**ids: Any) -> Iterator[None]:
    """Lines logged inside carry ``ids`` (None values are left out), added to any outer ones."""
    merged = {**(_context.get() or {}), **{k: v for k, v in ids.items() if v is not None}}
    token = _context.set(merged)
    try:
        yield
    finally:
        _context.reset(token)


def log_context_now() -> dict[str, Any]:
    return dict(_context.get() or {})


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "host": _process["host"],
            "pid": os.getpid(),  # a prefork child's own
        }
        if _process["kind"]:
            line["process"] = _process["kind"]
        line.update(_context.get() or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)
