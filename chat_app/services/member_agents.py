"""A member's own agent profiles, and who else sees them (issue 39, item 9).

A member builds a profile from what they may use: the models an admin configured, the enabled
tools they are granted (by function, grouped as the Tools Manager groups them) and the
imported sources they are granted (all of a source's tools at once). Every name posted is
checked against that offer, so a crafted form cannot list a tool its author was not granted.

Sharing reuses ``Agent.groups`` (who may pick a profile): the owner may name only groups they
belong to ("Everyone" included) whose sharing an admin has not switched off
(``GroupSharing.forbidden``); a group switched off later hides the profile from it again.

Whoever uses a profile is still held to their own grants: the round's offer and binding
narrow its tool list by the person's grants (``chat_app.services.tool_offer.turn_offer``,
``tools_app.services.binding``), so sharing a profile never shares a grant.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from chat_app.models import Agent, GroupSharing, Provider
from infra import access
from tools_app import selectors
from tools_app.i18n import text_localized
from tools_app.registry import GROUPS
from tools_app.services.grants import grants_narrow, user_groups


class MemberAgentError(ValueError):
    """A refused change, with the sentence to show."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# --- sharing ---------------------------------------------------------------------------------
def sharing_forbidden_ids() -> set[int]:
    return set(GroupSharing.objects.filter(forbidden=True).values_list("group_id", flat=True))


def group_sharing_forbidden(group: Group) -> bool:
    return GroupSharing.objects.filter(group=group, forbidden=True).exists()


def group_sharing_set(*, group: Group, forbidden: bool) -> None:
    """An admin's switch (the group's page): may members share with this group?"""
    GroupSharing.objects.update_or_create(group=group, defaults={"forbidden": forbidden})


def shareable_groups(user: Any) -> list[Group]:
    """The groups ``user`` may share with: their own (Everyone included), sharing allowed."""
    forbidden = sharing_forbidden_ids()
    return [g for g in user_groups(user) if g.pk not in forbidden]


def member_group_ids(user: Any) -> set[int]:
    return {g.pk for g in user_groups(user)}


def shared_with_checked(user: Any, group_ids: Iterable[int]) -> list[Group]:
    """The groups named, each one the person may share with; anything else is refused."""
    allowed = {g.pk: g for g in shareable_groups(user)}
    chosen = []
    for group_id in dict.fromkeys(group_ids):
        if group_id not in allowed:
            raise MemberAgentError(
                _("You may share only with groups you belong to whose sharing is allowed.")
            )
        chosen.append(allowed[group_id])
    return chosen


# --- who sees a profile ----------------------------------------------------------------------
def agents_visible_q(user: Any) -> Q:
    """The profiles ``user`` may pick, as a filter (not for staff: they see every profile):
    an admin's given to one of their groups, their own, and members' shared with one of their
    groups whose sharing is allowed."""
    groups = user_groups(user)
    allowed = groups.exclude(sharing__forbidden=True)
    return (
        Q(owner__isnull=True, groups__in=groups)
        | Q(owner=user)
        | Q(owner__isnull=False, groups__in=allowed)
    )


def agent_visible(user: Any, agent: Agent) -> bool:
    """One profile, through the access module's rule (a member's) or the grant (an admin's)."""
    if agent.owner_id is None:
        if access.staff_member(user):
            return True
        return access.active(user) and bool(
            member_group_ids(user) & set(agent.groups.values_list("pk", flat=True))
        )
    forbidden = sharing_forbidden_ids()
    shared = set(agent.groups.values_list("pk", flat=True)) - forbidden
    return access.personal_visible(
        user,
        owner_id=agent.owner_id,
        shared_with=shared,
        member_of=member_group_ids(user),
        staff_sees_all=True,
    )


def my_agents(user: Any) -> QuerySet[Agent]:
    return Agent.objects.filter(owner=user).prefetch_related("groups").order_by("name")


def my_agent(user: Any, agent_id: int) -> Agent | None:
    """The person's own profile (None: not there, or someone else's — the caller answers 404)."""
    agent = Agent.objects.filter(pk=agent_id).first()
    if agent is None or not access.personal_changeable(user, owner_id=agent.owner_id):
        return None
    return agent


def shared_with_me(user: Any) -> QuerySet[Agent]:
    """Members' profiles others shared with the person's groups."""
    allowed = user_groups(user).exclude(sharing__forbidden=True)
    return (
        Agent.objects.filter(owner__isnull=False, groups__in=allowed)
        .exclude(owner=user)
        .select_related("owner")
        .distinct()
        .order_by("name")
    )


# --- what a member may build from ------------------------------------------------------------
@dataclass(frozen=True)
class ToolOption:
    name: str
    description: str


@dataclass
class ToolGroupOption:
    name: str
    label: str
    tools: list[ToolOption] = field(default_factory=list)


@dataclass(frozen=True)
class SourceOption:
    name: str
    tools: tuple[str, ...]


@dataclass(frozen=True)
class ModelOption:
    value: str  # "provider_id:model"
    label: str


@dataclass
class AgentOptions:
    models: list[ModelOption]
    groups: list[ToolGroupOption]
    sources: list[SourceOption]
    share_groups: list[Group]

    def tool_names(self) -> set[str]:
        names = {t.name for g in self.groups for t in g.tools}
        return names | {n for s in self.sources for n in s.tools}


def agent_options(user: Any) -> AgentOptions:
    """What ``user`` may put in a profile: the enabled tools they are granted, the imported
    sources among them, the models admins configured (each provider's model and its
    ``allowed_models``), and the groups they may share with."""
    tools = selectors.enabled_tools(grants_narrow(user.pk, None))
    groups: dict[str, ToolGroupOption] = {}
    sources: dict[str, list[str]] = {}
    for tool in tools:
        source = getattr(tool, "source_name", "")
        if source:
            sources.setdefault(source, []).append(tool.tool_name)
            continue
        group = GROUPS.get(tool.tool_group)
        option = groups.setdefault(
            tool.tool_group,
            ToolGroupOption(tool.tool_group, str(group.label) if group else tool.tool_group),
        )
        option.tools.append(
            ToolOption(tool.tool_name, text_localized(tool.description()).split("\n")[0])
        )
    models = []
    for provider in Provider.objects.order_by("-is_default", "name"):
        for name in dict.fromkeys(str(n) for n in [provider.model, *provider.allowed_models]):
            if name:
                models.append(ModelOption(f"{provider.pk}:{name}", f"{provider.name} · {name}"))
    return AgentOptions(
        models=models,
        groups=list(groups.values()),
        sources=[SourceOption(n, tuple(ts)) for n, ts in sorted(sources.items())],
        share_groups=shareable_groups(user),
    )


# --- writes ----------------------------------------------------------------------------------
@dataclass
class AgentDraft:
    """What the form posts (names and ids as posted: checked by ``my_agent_save``)."""

    name: str
    description: str = ""
    system_prompt: str = ""
    model: str = ""  # "provider_id:model"; "" the default provider's model
    tools: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    groups: list[int] = field(default_factory=list)


def _checked_tools(options: AgentOptions, draft: AgentDraft) -> list[str]:
    offered = {t.name for g in options.groups for t in g.tools}
    by_source = {s.name: s.tools for s in options.sources}
    refused = [name for name in draft.tools if name not in offered]
    refused += [name for name in draft.sources if name not in by_source]
    if refused:
        raise MemberAgentError(
            _("Not yours to give an agent (not granted to you, or switched off): %(names)s")
            % {"names": ", ".join(sorted(set(refused)))}
        )
    names = list(dict.fromkeys(draft.tools))
    for source in draft.sources:
        names.extend(n for n in by_source[source] if n not in names)
    return names


def _checked_model(options: AgentOptions, value: str) -> tuple[int | None, str]:
    if not value:
        return None, ""
    if value not in {m.value for m in options.models}:
        raise MemberAgentError(_("That model is not offered here."))
    provider_id, _sep, model = value.partition(":")
    return int(provider_id), model


def my_agent_save(*, user: Any, draft: AgentDraft, agent: Agent | None = None) -> Agent:
    """Create (``agent`` None) or update the person's own profile from ``draft``: every tool,
    source, model and group checked against what they may give it (``agent_options``)."""
    if agent is not None and not access.personal_changeable(user, owner_id=agent.owner_id):
        raise MemberAgentError(_("That agent profile is not yours."))
    name = draft.name.strip()
    if not name:
        raise MemberAgentError(_("Give the agent a name."))
    if len(name) > 100 or len(draft.description) > 300:
        raise MemberAgentError(_("The name or description is too long."))
    options = agent_options(user)
    tools = _checked_tools(options, draft)
    provider_id, model = _checked_model(options, draft.model)
    groups = shared_with_checked(user, draft.groups)
    target = agent or Agent(owner=user, all_tools=False)
    target.name = name
    target.description = draft.description.strip()
    target.system_prompt = draft.system_prompt.strip()
    target.provider_id = provider_id
    target.model = model
    target.all_tools = False
    target.tools = tools
    try:
        with transaction.atomic():
            target.save()
            target.groups.set(groups)
    except IntegrityError:
        raise MemberAgentError(
            _("An agent profile named “%(name)s” exists already: pick another name.")
            % {"name": name}
        ) from None
    return target


def my_agent_delete(*, user: Any, agent: Agent) -> None:
    if not access.personal_changeable(user, owner_id=agent.owner_id):
        raise MemberAgentError(_("That agent profile is not yours."))
    agent.delete()


def agent_draft_of(agent: Agent, options: AgentOptions) -> AgentDraft:
    """The form's values for an existing profile (a source is ticked when the profile lists
    every one of its tools)."""
    listed = set(agent.tools or [])
    sources = [s.name for s in options.sources if s.tools and set(s.tools) <= listed]
    in_sources = {n for s in options.sources if s.name in sources for n in s.tools}
    return AgentDraft(
        name=agent.name,
        description=agent.description,
        system_prompt=agent.system_prompt,
        model=f"{agent.provider_id}:{agent.model}" if agent.provider_id and agent.model else "",
        tools=[n for n in agent.tools or [] if n not in in_sources],
        sources=sources,
        groups=list(agent.groups.values_list("pk", flat=True)),
    )
