"""Escalation once untrusted content entered a turn.

Tool groups declare themselves sources (``ToolGroup.untrusted_source``: HTTP, the browser,
research, imported MCP and OpenAPI tools, documents); functions declare themselves sinks
(``BaseTool.sink``: an HTTP request with a body, send_message, a host-folder write,
container_run, a shell with network). Once a result of a source reached the model in a turn,
a sink called later in the same turn waits for a person (or is refused), whatever the group's
own approval setting: a page the model read may have told it to send something out.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from tools_app.models import ToolCall
from tools_app.registry import GROUPS, BaseTool, GroupSettings

MODES = ("approval", "block", "off")


def untrusted_entry(turn_id: int | None) -> str:
    """What untrusted content entered turn ``turn_id`` first (a URL, a query, or the kind of
    source), or "" when none did."""
    if turn_id is None:
        return ""
    sources = {name: g.untrusted_source for name, g in GROUPS.items() if g.untrusted_source}
    if not sources:
        return ""
    first = (
        ToolCall.objects.filter(
            turn_id=turn_id, group__in=list(sources), status=ToolCall.Status.SUCCEEDED
        )
        .order_by("finished_at", "pk")
        .values_list("group", "arguments")
        .first()
    )
    if first is None:
        return ""
    group, arguments = first
    return _origin(arguments) or str(sources.get(group, group))


def _origin(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    for key in ("url", "query", "path", "name"):
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:200]
    return ""


def sink_reason(
    *, tool: type[BaseTool], validated: BaseTool, settings: GroupSettings, turn_id: int | None
) -> str:
    """Why this call must wait (or be refused): "" when it is not a sink or nothing untrusted
    entered its turn."""
    what = validated.sink(settings)
    if not what:
        return ""
    entry = untrusted_entry(turn_id)
    if not entry:
        return ""
    return _("%(what)s, after content from %(origin)s entered this turn") % {
        "what": what,
        "origin": entry,
    }
