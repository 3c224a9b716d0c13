"""What the agent-profile and provider pages show: the tools by group as checkboxes, the
provider rows (never their key)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chat_app.models import Agent, Provider
from tools_app.selectors import config_snapshot, registered_groups, registered_tools


@dataclass
class ToolChoice:
    name: str
    description: str
    checked: bool
    enabled: bool


@dataclass
class GroupChoice:
    name: str
    label: str
    tools: list[ToolChoice] = field(default_factory=list)

    @property
    def checked(self) -> bool:
        return bool(self.tools) and all(t.checked for t in self.tools)

    @property
    def some_checked(self) -> bool:
        return any(t.checked for t in self.tools) and not self.checked


def _summary(tool: Any) -> str:
    doc = (tool.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def tool_choices(chosen: set[str]) -> tuple[list[GroupChoice], list[str]]:
    """Every registered tool by group (in the Tools Manager's order), ticked when in
    ``chosen``; and the chosen names no tool has (shown so they are not dropped silently)."""
    snapshot = config_snapshot()
    groups = []
    for group in registered_groups():
        choice = GroupChoice(name=group.name, label=group.label)
        for tool in sorted(group.tools, key=lambda t: t.tool_name):
            enabled = (
                snapshot.group_enabled(group.name) and snapshot.function(tool.tool_name).enabled
            )
            choice.tools.append(
                ToolChoice(tool.tool_name, _summary(tool), tool.tool_name in chosen, enabled)
            )
        if choice.tools:
            groups.append(choice)
    unknown = sorted(chosen - set(registered_tools()))
    return groups, unknown


def group_functions() -> dict[str, list[str]]:
    return {g.name: [t.tool_name for t in g.tools] for g in registered_groups()}


KIND_SHORT: dict[str, str] = {
    Agent.Kind.TOOL_CALLING: "tool calling",
    Agent.Kind.SCHEMA_GUIDED: "schema-guided",
    Agent.Kind.REASONING_AS_TOOL: "reasoning as a tool",
}


def agent_rows() -> list[dict[str, Any]]:
    rows = []
    for agent in Agent.objects.select_related("provider", "owner").order_by("-is_default", "name"):
        rows.append(
            {
                "agent": agent,
                "tools": "every enabled tool" if agent.all_tools else f"{len(agent.tools)} tools",
                "model": agent.model or (agent.provider.model if agent.provider else ""),
                "kind": KIND_SHORT.get(agent.kind, agent.kind),
            }
        )
    return rows


def provider_rows() -> list[dict[str, Any]]:
    used: dict[int, int] = {}
    for provider_id in Agent.objects.exclude(provider=None).values_list("provider_id", flat=True):
        used[provider_id] = used.get(provider_id, 0) + 1
    return [
        {"provider": p, "has_key": bool(p.api_key), "agents": used.get(p.pk, 0)}
        for p in Provider.objects.order_by("-is_default", "name")
    ]
