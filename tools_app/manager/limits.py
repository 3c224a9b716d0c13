"""The key limits of a tool group, in words, for the Tools Manager's overview (seed 003's
"Browser Tool — Timeout: 30s, Max screenshots: 10, Allowed domains: *.github.com …").

Each group names its key settings (``ToolGroup.limits``; the timeout when it names none);
they are shown with their units, lists shortened to their first entries, and each field's
description as the hover text."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext, gettext_noop, ngettext
from pydantic import SecretStr

from tools_app.i18n import text_localized
from tools_app.manager.forms import field_label
from tools_app.registry import GroupSettings, ToolGroup

LIST_SHOWN = 3
# Words where the field's name alone says too little.
LABELS = {
    "max_file_bytes": gettext_noop("Max file size"),
    "max_response_bytes": gettext_noop("Max response size"),
    "max_output_bytes": gettext_noop("Output kept per stream"),
    "max_report_bytes": gettext_noop("Max report size"),
    "max_read_bytes": gettext_noop("Read per file"),
    "max_skill_bytes": gettext_noop("Max skill size"),
    "max_content_chars": gettext_noop("Max text per save"),
    "core_max_chars": gettext_noop("Core memory size"),
    "max_chars_per_page": gettext_noop("Text per page"),
    "max_urls": gettext_noop("Max URLs per call"),
    "max_result_chars": gettext_noop("Result size for the model"),
    "javascript_enabled": gettext_noop("JavaScript"),
    "allow_network": gettext_noop("Network"),
    "network": gettext_noop("Network"),
    "staff_only": gettext_noop("Admins only"),
}
# What an empty value means for the fields where that is not "none".
EMPTY = {
    "allowed_domains": gettext_noop("any public host"),
    "allowed_hosts": gettext_noop("any public host"),
    "allowed_commands": gettext_noop("any program"),
    "engine": gettext_noop("DOCKER_HOST or the default socket"),
}
NONE = gettext_noop("none")


def _label(name: str) -> str:
    if name in LABELS:
        return gettext(LABELS[name])
    return text_localized(field_label(name))  # as the group's settings form says it


def _size(value: int) -> str:
    # Decimal units, as the settings' defaults are written (1_000_000 is "1 MB").
    units = (
        (gettext_noop("%(number)s GB"), 10**9),
        (gettext_noop("%(number)s MB"), 10**6),
        (gettext_noop("%(number)s kB"), 10**3),
    )
    for unit, size in units:
        if value >= size:
            number = value / size
            shown = f"{number:.0f}" if number == int(number) else f"{number:.1f}"
            return gettext(unit) % {"number": shown}
    return ngettext("%(number)s byte", "%(number)s bytes", value) % {"number": f"{value:,}"}


def _value(name: str, value: Any) -> str:
    if isinstance(value, SecretStr):
        return gettext("set") if value.get_secret_value() else gettext("not set")
    if isinstance(value, bool):
        return gettext("on") if value else gettext("off")
    if value in ("", [], None):
        return gettext(EMPTY.get(name, NONE))
    if isinstance(value, list):
        shown = ", ".join(str(v) for v in value[:LIST_SHOWN])
        more = len(value) - LIST_SHOWN
        if more <= 0:
            return shown
        return ngettext("%(shown)s (+%(more)s more)", "%(shown)s (+%(more)s more)", more) % {
            "shown": shown,
            "more": more,
        }
    if isinstance(value, int) and name.endswith("_seconds"):
        return gettext("%(seconds)s s") % {"seconds": value}
    if isinstance(value, int) and name.endswith("_bytes"):
        return _size(value)
    if isinstance(value, int) and name.endswith("_chars"):
        return ngettext("%(count)s character", "%(count)s characters", value) % {
            "count": f"{value:,}"
        }
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
                "help": text_localized(fields[name].description or ""),
            }
        )
    return out
