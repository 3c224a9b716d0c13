"""The key limits of a tool group, in words, for the Tools Manager's overview (seed 003's
"Browser Tool — Timeout: 30s, Max screenshots: 10, Allowed domains: *.github.com …").

Each group names its key settings (``ToolGroup.limits``; the timeout when it names none);
they are shown with their units, lists shortened to their first entries, and each field's
description as the hover text."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from tools_app.registry import GroupSettings, ToolGroup

LIST_SHOWN = 3
# Words where the field's name alone says too little.
LABELS = {
    "max_file_bytes": "Max file size",
    "max_response_bytes": "Max response size",
    "max_output_bytes": "Output kept per stream",
    "max_report_bytes": "Max report size",
    "max_read_bytes": "Read per file",
    "max_skill_bytes": "Max skill size",
    "max_content_chars": "Max text per save",
    "core_max_chars": "Core memory size",
    "max_chars_per_page": "Text per page",
    "max_urls": "Max URLs per call",
    "max_result_chars": "Result size for the model",
    "javascript_enabled": "JavaScript",
    "allow_network": "Network",
    "network": "Network",
    "staff_only": "Admins only",
}
# What an empty value means for the fields where that is not "none".
EMPTY = {
    "allowed_domains": "any public host",
    "allowed_hosts": "any public host",
    "allowed_commands": "any program",
    "engine": "DOCKER_HOST or the default socket",
}


def _label(name: str) -> str:
    if name in LABELS:
        return LABELS[name]
    words = name.removesuffix("_seconds").removesuffix("_bytes").removesuffix("_chars")
    text = words.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _size(value: int) -> str:
    # Decimal units, as the settings' defaults are written (1_000_000 is "1 MB").
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if value >= size:
            number = value / size
            return f"{number:.0f} {unit}" if number == int(number) else f"{number:.1f} {unit}"
    return f"{value:,} bytes"


def _value(name: str, value: Any) -> str:
    if isinstance(value, SecretStr):
        return "set" if value.get_secret_value() else "not set"
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in ("", [], None):
        return EMPTY.get(name, "none")
    if isinstance(value, list):
        shown = ", ".join(str(v) for v in value[:LIST_SHOWN])
        more = len(value) - LIST_SHOWN
        return f"{shown} (+{more} more)" if more > 0 else shown
    if isinstance(value, int) and name.endswith("_seconds"):
        return f"{value} s"
    if isinstance(value, int) and name.endswith("_bytes"):
        return _size(value)
    if isinstance(value, int) and name.endswith("_chars"):
        return f"{value:,} characters"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def key_limits(group: ToolGroup, settings: GroupSettings) -> list[dict[str, str]]:
    """``[{"name", "label", "value", "help"}]`` for the group's key settings."""
    fields = type(settings).model_fields
    names = group.limits or (("timeout_seconds",) if "timeout_seconds" in fields else ())
    out = []
    for name in names:
        if name not in fields:
            continue
        out.append(
            {
                "name": name,
                "label": _label(name),
                "value": _value(name, getattr(settings, name)),
                "help": fields[name].description or "",
            }
        )
    return out
