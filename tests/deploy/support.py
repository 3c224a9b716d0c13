"""What the deployment tests share: where things are, and the longest tool timeout."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def longest_tool_timeout() -> int:
    """The largest ``timeout_seconds`` any tool group's settings accept (its ``le`` bound):
    what a worker's stop grace period must cover for a running call to finish."""
    from tools_app.registry import GROUPS

    bounds = []
    for group in GROUPS.values():
        field = group.settings_model.model_fields.get("timeout_seconds")
        if field is None:
            continue
        bounds += [meta.le for meta in field.metadata if getattr(meta, "le", None) is not None]
    assert bounds, "no tool group declares a bounded timeout_seconds"
    return int(max(bounds))


_UNITS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 0.000001}


def duration_seconds(value: str | int | float) -> float:
    """A compose duration ("3630s", "1h0m30s", "1m30s") or a number of seconds."""
    if isinstance(value, int | float):
        return float(value)
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|us|m|s)", value)
    if not parts or "".join(n + u for n, u in parts) != value.strip():
        raise ValueError(f"not a duration: {value!r}")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def tool_path(name: str) -> str | None:
    """A command on PATH, or installed beside this interpreter (``make helm`` puts helm in
    the venv's bin/)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else None
