"""Escalation once untrusted content entered a turn.

Tool groups declare themselves sources (``ToolGroup.untrusted_source``: HTTP, the browser,
research, imported MCP and OpenAPI tools, documents). Content also enters a turn without a
tool: files uploaded with its message, a subagent's answer delivered into the conversation;
the apps that hold those register a function that names them (``turn_entry_register``,
chat_app). Functions declare themselves sinks
(``BaseTool.sink``: an HTTP request with a body, send_message, a host-folder write,
container_run, a shell with network). Once a result of a source reached the model in a turn,
a sink called later in the same turn waits for a person (or is refused), whatever the group's
own approval setting: a page the model read may have told it to send something out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.utils.translation import gettext as _

from tools_app.models import ToolCall
from tools_app.registry import GROUPS, BaseTool, GroupSettings

MODES = ("approval", "block", "off")

# turn id → what entered it other than through a tool result ("" when nothing did).
_turn_entries: list[Callable[[int], str]] = []


def turn_entry_register(entry: Callable[[int], str]) -> None:
    """Name content that enters a turn with its message rather than through a tool (uploads,
    a subagent's answer): an app above this one knows its messages."""
    if entry not in _turn_entries:
        _turn_entries.append(entry)


def untrusted_entry(turn_id: int | None) -> str:
    """What untrusted content entered turn ``turn_id`` first (what came with its message, then
    a URL, a query, or the kind of a tool's source), or "" when none did. Asked for sinks only:
    nothing here runs for other calls."""
    if turn_id is None:
        return ""
    for entry in _turn_entries:
        if found := entry(turn_id):
            return found
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
