"""Saving and deleting providers and agent profiles from the admin pages: one default at a
time, tool names checked against the registered tools, every change an audit record (the key
is recorded only as set / changed / removed)."""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from chat_app.admin_pages.forms import AgentPageForm, ProviderPageForm
from chat_app.models import Agent, Provider
from tools_app.selectors import registered_tools
from tools_app.services.audit import audit_settings_change

# What the audit records of a provider change: the fields its page edits (the key apart).
_PROVIDER_AUDITED = tuple(ProviderPageForm.Meta.fields)
_AGENT_AUDITED = (
    "name",
    "description",
    "system_prompt",
    "provider_id",
    "model",
    "kind",
    "all_tools",
    "tools",
    "tool_budgets",
    "tool_schema_budget",
    "always_on_tools",
    "max_rounds",
    "max_iterations",
    "max_calls_per_turn",
    "max_calls_per_conversation",
    "untrusted_sinks",
    "is_default",
)
_BUDGET_LINE = re.compile(r"^\s*([\w.:-]+)\s*[:=]\s*(\d+)\s*$")


class AdminPageError(ValueError):
    """A refused change, as a sentence for the admin."""


def _provider_state(provider: Provider) -> dict[str, Any]:
    state = {f: getattr(provider, f) for f in _PROVIDER_AUDITED}
    state["api_key"] = "set" if provider.api_key else "none"
    return state


@transaction.atomic
def provider_save(*, actor: Any, form: ProviderPageForm) -> Provider:
    instance = form.instance
    before = _provider_state(Provider.objects.get(pk=instance.pk)) if instance.pk else {}
    old_key = Provider.objects.get(pk=instance.pk).api_key if instance.pk else ""
    provider = form.save(commit=False)
    endpoint = ("kind", "base_url", "model")
    if before and any(before[f] != getattr(provider, f) for f in endpoint):
        provider.tools_supported = None  # another endpoint or model: detect tool calls again
    provider.save()
    if provider.is_default:
        Provider.objects.exclude(pk=provider.pk).filter(is_default=True).update(is_default=False)
    after = _provider_state(provider)
    if before and provider.api_key and provider.api_key != old_key:
        after["api_key"] = "changed"
    audit_settings_change(
        user=actor, group="providers", tool=provider.name[:64], before=before, after=after
    )
    return provider


@transaction.atomic
def provider_delete(*, actor: Any, provider: Provider) -> None:
    before = _provider_state(provider)
    provider.delete()  # agents and conversations that named it fall back to the default
    audit_settings_change(
        user=actor, group="providers", tool=before["name"], before=before, after={}
    )


def budgets_parse(text: str) -> dict[str, int]:
    """``web_search: 8`` lines (or ``=``), one tool a line; AdminPageError names a bad line."""
    budgets: dict[str, int] = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        if not line.strip():
            continue
        match = _BUDGET_LINE.match(line)
        if match is None:
            raise AdminPageError(
                _("line %(number)s: write a tool name and a number, e.g. web_search: 8")
                % {"number": number}
            )
        budgets[match[1]] = int(match[2])
    return budgets


def budgets_text(budgets: dict[str, int]) -> str:
    return "\n".join(f"{tool}: {limit}" for tool, limit in sorted((budgets or {}).items()))


def tools_chosen(
    *, all_tools: bool, tools: list[str], groups: list[str], known_groups: dict[str, list[str]]
) -> list[str]:
    """The tool names an agent form chose: single functions plus every function of each ticked
    group. Unknown tool or group names are refused (AdminPageError), so a typo or a tool that
    is gone is never saved silently."""
    if all_tools:
        return []
    known = registered_tools()
    unknown_groups = sorted(set(groups) - set(known_groups))
    if unknown_groups:
        raise AdminPageError(
            _("unknown tool group: %(join)s") % {"join": ", ".join(unknown_groups)}
        )
    names = list(dict.fromkeys([*tools, *(n for g in groups for n in known_groups[g])]))
    unknown = sorted(n for n in names if n not in known)
    if unknown:
        raise AdminPageError(
            _("unknown tool: %(join)s — untick it or add the tool first")
            % {"join": ", ".join(unknown)}
        )
    if not names:
        raise AdminPageError(_("choose at least one tool, or every enabled tool"))
    return sorted(names)


def _agent_state(agent: Agent) -> dict[str, Any]:
    return {f: getattr(agent, f) for f in _AGENT_AUDITED}


@transaction.atomic
def agent_save(
    *, actor: Any, form: AgentPageForm, tools: list[str], budgets: dict[str, int]
) -> Agent:
    instance = form.instance
    before = _agent_state(Agent.objects.get(pk=instance.pk)) if instance.pk else {}
    known = registered_tools()
    unknown = sorted(n for n in budgets if n not in known)
    if unknown:
        raise AdminPageError(
            _("budget for an unknown tool: %(join)s") % {"join": ", ".join(unknown)}
        )
    agent = form.save(commit=False)
    agent.tools = tools
    agent.tool_budgets = budgets
    agent.save()
    if agent.is_default:
        Agent.objects.exclude(pk=agent.pk).filter(is_default=True).update(is_default=False)
    audit_settings_change(
        user=actor, group="agents", tool=agent.name[:64], before=before, after=_agent_state(agent)
    )
    return agent


@transaction.atomic
def agent_delete(*, actor: Any, agent: Agent) -> None:
    if Agent.objects.count() <= 1:
        raise AdminPageError(_("the last agent profile cannot be deleted"))
    before = _agent_state(agent)
    was_default = agent.is_default
    agent.delete()  # conversations that used it fall back to the default profile
    if was_default:
        successor = Agent.objects.order_by("name").first()
        if successor is not None:
            Agent.objects.filter(pk=successor.pk).update(is_default=True)
    audit_settings_change(user=actor, group="agents", tool=before["name"], before=before, after={})
