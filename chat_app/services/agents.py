"""Agent profiles: the default one, the one a conversation uses, the shipped Researcher,
YAML import/export."""

from __future__ import annotations

from typing import Any

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import gettext as _

from chat_app.agent_profiles import RESEARCHER
from chat_app.models import Agent, Conversation, Provider, default_tool_budgets
from chat_app.services.member_agents import agent_visible, agents_visible_q
from chat_app.services.sgr_agents import SgrShapeError, is_sgr_shape, sgr_items
from infra.prepared import Prepared
from tools_app.selectors import config_memo
from tools_app.services.grants import everyone_group

DEFAULT_AGENT = "General"
_FIELDS = (
    "description",
    "system_prompt",
    "model",
    "all_tools",
    "tools",
    "max_rounds",
    "max_calls_per_turn",
    "max_calls_per_conversation",
    "untrusted_sinks",
    "kind",
    "max_iterations",
    "tool_budgets",
    "tool_limits",
    "tool_language",
    "tool_schema_budget",
    "always_on_tools",
    "is_default",
)
# Keys of YAML written before per-tool budgets were one field: still read, into tool_budgets.
_LEGACY_BUDGETS = {"max_clarifications": "clarification", "max_searches": "web_search"}


class AgentImportError(ValueError):
    pass


def agent_default() -> Agent:
    # Unordered, picked in Python: an ORDER BY on this wide model costs more in Django's
    # compiler than the query (this runs every model round).
    defaults = list(Agent.objects.filter(is_default=True).order_by())
    if defaults:
        return min(defaults, key=lambda a: a.name)
    agent, created = Agent.objects.get_or_create(
        name=DEFAULT_AGENT,
        defaults={"description": "Every enabled tool, the built-in prompt.", "is_default": True},
    )
    if created:  # a shipped profile: everyone's, as chat_app 0012 gives it on a fresh install
        agent.groups.add(everyone_group())
    return agent


def agent_shipped(name: str) -> Agent | None:
    """The profile the product ships under ``name``, made now through the function that
    makes it when the chat first needs it ("General": ``agent_default``; "Researcher":
    ``researcher_ensure``), so a fresh install's ``manage.py access import`` may name it
    before anyone has chatted. None: not a shipped name, or "General" while another profile
    is the default (an admin replaced it)."""
    if name == DEFAULT_AGENT:
        agent = agent_default()
        return agent if agent.name == name else None
    if name == RESEARCHER["name"]:
        return researcher_ensure()
    return None


def agents_for(user: Any) -> QuerySet[Agent]:
    """The profiles ``user`` may pick: those given to one of their groups (Everyone
    included), their own, and members' shared with one of their groups
    (``member_agents.agents_visible_q``); every profile for staff."""
    if _sees_every_profile(user):
        return Agent.objects.all()
    return agents_for_member(user.pk)


def _sees_every_profile(user: Any) -> bool:
    return bool(getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))


# The chat page's agent picker, on every page load: compiled once per process
# (infra.prepared); the member's query has three subqueries over their groups.
_PICKABLE = Prepared(
    lambda user_id: agents_for_member(user_id).select_related("owner"), user_id=int
)
_EVERY = Prepared(lambda: Agent.objects.select_related("owner"))


def agents_for_member(user_id: int) -> QuerySet[Agent]:
    return Agent.objects.filter(agents_visible_q(user_id)).distinct()


def agent_choices(user: Any) -> list[Agent]:
    """``agents_for(user)`` with each profile's owner, read (what the picker lists)."""
    if _sees_every_profile(user):
        return list(_EVERY.rows())
    return list(_PICKABLE.rows(user_id=int(user.pk)))


def agent_granted(user: Any, agent: Agent) -> bool:
    return agents_for(user).filter(pk=agent.pk).exists()


def agent_default_pinned() -> Agent:
    """``agent_default``, within ``config_pinned`` read once per configuration token."""
    return config_memo(("agent", None), agent_default)


def agent_for_conversation(conversation: Conversation) -> Agent:
    """The conversation's agent profile; within a model round (``config_pinned``) read once
    per configuration token, not once per round."""
    agent_id = conversation.agent_id
    if agent_id is not None:
        agent = config_memo(
            ("agent", agent_id),
            lambda: next(iter(Agent.objects.filter(pk=agent_id).order_by()), None),
        )
        if agent is not None and _still_shared(conversation, agent):
            return agent
    return agent_default_pinned()


def _still_shared(conversation: Conversation, agent: Agent) -> bool:
    """A member's profile that someone else picked serves them only while it is shared with
    them (its owner unshared it, left the group, or an admin closed the group to sharing:
    the conversation goes on with the default profile). Asked each round for such
    conversations only: sharing does not move the configuration token."""
    owner_id = conversation.owner_id
    if agent.owner_id is None or owner_id is None or agent.owner_id == owner_id:
        return True
    person = get_user_model().objects.filter(pk=owner_id).first()
    return person is not None and agent_visible(person, agent)


def agent_tool_limits(conversation_id: int, group: str) -> dict[str, int]:
    """The lower limits the conversation's agent profile sets for ``group`` (registered with
    ``tools_app.services.narrowing`` at ready(): a call runs under them)."""
    conversation = Conversation.objects.filter(pk=conversation_id).only("pk", "agent_id").first()
    if conversation is None:
        return {}
    limits = agent_for_conversation(conversation).tool_limits or {}
    found = limits.get(group) if isinstance(limits, dict) else None
    return dict(found) if isinstance(found, dict) else {}


def researcher_ensure() -> Agent:
    """The shipped "Researcher" profile (the data migration creates it; tests and a
    flushed database call this)."""
    values = {k: v for k, v in RESEARCHER.items() if k != "name"}
    agent, created = Agent.objects.get_or_create(name=RESEARCHER["name"], defaults=values)
    if created:
        agent.groups.add(everyone_group())
    return agent


def agents_export() -> str:
    data = []
    for agent in Agent.objects.select_related("provider").order_by("name"):
        item: dict[str, Any] = {"name": agent.name}
        item.update({f: getattr(agent, f) for f in _FIELDS})
        item["provider"] = agent.provider.name if agent.provider else None
        data.append(item)
    return yaml.safe_dump({"agents": data}, sort_keys=False, allow_unicode=True)


def _budgets_from_legacy(item: dict[str, Any], legacy: dict[str, Any]) -> dict[str, Any]:
    """``max_clarifications`` / ``max_searches`` set the budgets of their tools (0: no limit)
    on top of the agent's budgets (the default ones for a new agent)."""
    if "tool_budgets" in item:
        raise AgentImportError(
            _("agent %(name)s: give tool_budgets or %(sorted)s, not both")
            % {"name": f"{item['name']!r}", "sorted": sorted(legacy)}
        )
    existing = Agent.objects.filter(name=item["name"]).values_list("tool_budgets", flat=True)
    budgets = dict(next(iter(existing), None) or default_tool_budgets())
    for key, value in legacy.items():
        budgets.pop(_LEGACY_BUDGETS[key], None)
        if value:
            budgets[_LEGACY_BUDGETS[key]] = value
    return budgets


def agents_import(text: str, *, notes: list[str] | None = None) -> list[Agent]:
    """Create or update agents by name from YAML (as written by ``agents_export``, or SGR
    Deep Research's ``agents.yaml``: ``sgr_agents``). ``notes`` gets what an SGR file had
    that a profile does not take (deployment settings)."""
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise AgentImportError(_("not valid YAML: %(error)s") % {"error": exc}) from exc
    if is_sgr_shape(data):
        try:
            data = {"agents": sgr_items(data, notes if notes is not None else [])}
        except SgrShapeError as exc:
            raise AgentImportError(str(exc)) from exc
    items = data.get("agents") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise AgentImportError(_("expected a top-level 'agents:' list"))
    saved = []
    with transaction.atomic():
        for i, item in enumerate(items):
            if not isinstance(item, dict) or not item.get("name"):
                raise AgentImportError(_("agent #%(value)s has no name") % {"value": i + 1})
            unknown = set(item) - set(_FIELDS) - set(_LEGACY_BUDGETS) - {"name", "provider"}
            if unknown:
                raise AgentImportError(
                    _("agent %(name)s: unknown keys %(sorted)s")
                    % {"name": f"{item['name']!r}", "sorted": sorted(unknown)}
                )
            values = {f: item[f] for f in _FIELDS if f in item}
            legacy = {key: item[key] for key in _LEGACY_BUDGETS if key in item}
            if legacy:
                values["tool_budgets"] = _budgets_from_legacy(item, legacy)
            languages = {"", *(code for code, _name in settings.LANGUAGES)}
            if values.get("tool_language", "") not in languages:
                raise AgentImportError(
                    _("agent %(name)s: tool_language must be one of %(codes)s")
                    % {"name": f"{item['name']!r}", "codes": ", ".join(sorted(languages - {""}))}
                )
            if "tools" in values and not isinstance(values["tools"], list):
                raise AgentImportError(
                    _("agent %(name)s: tools must be a list") % {"name": f"{item['name']!r}"}
                )
            provider_name = item.get("provider")
            if provider_name:
                provider = Provider.objects.filter(name=provider_name).first()
                if provider is None:
                    raise AgentImportError(
                        _("agent %(name)s: no provider named %(provider_name)s")
                        % {"name": f"{item['name']!r}", "provider_name": f"{provider_name!r}"}
                    )
                values["provider"] = provider
            elif "provider" in item:
                values["provider"] = None
            agent, _created = Agent.objects.update_or_create(name=item["name"], defaults=values)
            try:
                agent.full_clean()
            except ValidationError as exc:
                words = "; ".join(
                    f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
                )
                raise AgentImportError(
                    _("agent %(name)s: %(errors)s") % {"name": f"{item['name']!r}", "errors": words}
                ) from None
            saved.append(agent)
        if any(a.is_default for a in saved):
            default = [a for a in saved if a.is_default][-1]
            Agent.objects.exclude(pk=default.pk).update(is_default=False)
    return saved
