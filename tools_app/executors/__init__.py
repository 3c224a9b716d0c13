"""Executor packages, found by convention from this one list.

Each entry is a package ``tools_app.executors.<name>`` with the same shape: ``tools.py``
(Pydantic tool schemas), ``settings.py`` (the group's admin-editable settings),
``activity.py`` (what runs). Importing the package registers its tools and activities.
"""

from __future__ import annotations

import importlib

EXECUTORS: list[str] = [
    "shell", "file", "http", "dev", "docker", "time", "browser",
    "memory", "docs", "skills", "messaging", "schedules", "subagents", "agent", "openapi",
    "mcp", "research",
]  # fmt: skip


def load_all() -> None:
    for name in EXECUTORS:
        for module in ("settings", "tools", "activity"):
            importlib.import_module(f"tools_app.executors.{name}.{module}")
