"""Executor packages, found by convention from this one list.

Each entry is a package ``tools_app.executors.<name>`` (or, for the platform's tools,
``platform_app.executors.<name>``) with the same shape: ``tools.py``
(Pydantic tool schemas), ``settings.py`` (the group's admin-editable settings),
``activity.py`` (what runs), and optionally ``preview.py`` (what a call would do, for the
person approving it). Importing the package registers its tools and activities.
"""

from __future__ import annotations

import importlib
import importlib.util

EXECUTORS: list[str] = [
    "shell", "file", "http", "dev", "docker", "time", "browser", "openapi", "mcp", "research",
    "defined",
]  # fmt: skip


def load_executors(package: str, names: list[str]) -> None:
    """Import ``<package>.<name>.{settings,tools,activity}`` for each name, and its
    ``preview`` when it has one (what an approver sees before deciding): an app's ``ready()``
    loads its own executor packages (the platform's live in ``platform_app``)."""
    for name in names:
        for module in ("settings", "tools", "activity"):
            importlib.import_module(f"{package}.{name}.{module}")
        if importlib.util.find_spec(f"{package}.{name}.preview") is not None:
            importlib.import_module(f"{package}.{name}.preview")


def load_all() -> None:
    load_executors("tools_app.executors", EXECUTORS)
