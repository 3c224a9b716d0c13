"""Moved to ``infra.safe_files`` (the chat's uploads use it too); kept for the importers here."""

from __future__ import annotations

from infra.safe_files import (
    MAX_COMPONENT,
    MAX_PATH,
    Entry,
    FileData,
    Missing,
    Refused,
    read_beneath,
    split_relative,
    walk_beneath,
)

__all__ = [
    "MAX_COMPONENT",
    "MAX_PATH",
    "Entry",
    "FileData",
    "Missing",
    "Refused",
    "read_beneath",
    "split_relative",
    "walk_beneath",
]
