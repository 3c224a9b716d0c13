"""Configuration as code: groups, their members, their grants and the functions' approval
modes as YAML (``manage.py access export`` / ``manage.py access import FILE``)::

    groups:
      - name: support
        members: [alice]
        tools: [current_time, "group:Research"]  # functions, or "group:<tool group>" for all
        agents: [General]                        # admins' profiles (members' shares stay)
        sources: []                              # imported MCP servers / OpenAPI documents
    approvals:
      - tool: http_request
        mode: approver                           # none | requester | approver
        approvers: [leads]                       # group names (approver mode)
        shadow: true                             # not applied: run as the shadow policy

An import creates the groups it names and sets what each entry gives (a key left out leaves
that part alone; ``members`` of "Everyone" cannot be given: every user is in it). Groups and
functions the file does not name are left as they are. Every name is checked first: an
unknown one is an error that names its line, and nothing is imported (one transaction).

An entry marked ``shadow: true`` is a rule to try, not to apply: an import leaves it out,
and "Run as shadow" (``platform_app.people.policy``) runs exactly those entries beside the
live policy (or the whole file, when none is marked). ``access_plan`` checks a file without
writing; ``access_rules`` gives a checked file to ``tools_app.services.policy``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.translation import gettext as _

from chat_app.models import Agent
from chat_app.services.agents import agent_shipped
from platform_app.people.services import EVERYONE, everyone_group
from tools_app import selectors
from tools_app.models import ToolConfigVersion, ToolFunctionConfig, ToolGrant, ToolSource
from tools_app.services.audit import audit_people_change
from tools_app.services.grants import grants_set, group_grants

GROUP_PREFIX = "group:"
MODES = ("none", "requester", "approver")
_GROUP_KEYS = {"name", "members", "tools", "agents", "sources", "shadow"}
_APPROVAL_KEYS = {"tool", "mode", "approvers", "shadow"}


class AccessImportError(ValueError):
    """A file that cannot be imported; the message names the line."""


# --- export ----------------------------------------------------------------------------------
def access_export() -> str:
    groups: list[dict[str, Any]] = []
    everyone_group()
    for group in Group.objects.order_by("name"):
        given = group_grants(group)
        entry: dict[str, Any] = {"name": group.name}
        if group.name != EVERYONE:
            entry["members"] = sorted(group.user_set.values_list("username", flat=True))
        entry["tools"] = [f"{GROUP_PREFIX}{n}" for n in given["group"]] + given["function"]
        entry["agents"] = sorted(
            Agent.objects.filter(groups=group, owner__isnull=True).values_list("name", flat=True)
        )
        entry["sources"] = given["source"]
        groups.append(entry)
    groups.sort(key=lambda e: (e["name"] != EVERYONE, e["name"]))
    approvals = []
    configs = ToolFunctionConfig.objects.exclude(approval_mode="none").prefetch_related(
        "approver_groups"
    )
    for config in configs.order_by("name"):
        item: dict[str, Any] = {"tool": config.name, "mode": config.approval_mode}
        if config.approval_mode == "approver":
            item["approvers"] = sorted(g.name for g in config.approver_groups.all())
        approvals.append(item)
    return yaml.safe_dump(
        {"groups": groups, "approvals": approvals}, sort_keys=False, allow_unicode=True
    )


# --- reading with line numbers -----------------------------------------------------------------
class _Map(dict[str, Any]):
    line = 0


class _Seq(list[Any]):
    line = 0
    lines: list[int]


class _Loader(yaml.SafeLoader):
    pass


def _mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Map:
    value = _Map({str(k): v for k, v in loader.construct_mapping(node, deep=True).items()})
    value.line = node.start_mark.line + 1
    return value


def _sequence(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> _Seq:
    value = _Seq(loader.construct_sequence(node, deep=True))
    value.line = node.start_mark.line + 1
    value.lines = [item.start_mark.line + 1 for item in node.value]
    return value


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _sequence)


def _line(value: Any, index: int | None = None) -> int:
    if isinstance(value, _Seq) and index is not None and index < len(value.lines):
        return value.lines[index]
    return int(getattr(value, "line", 0))


def _fail(line: int, message: str) -> AccessImportError:
    return AccessImportError(f"line {line}: {message}" if line else message)


def _names(entry: _Map, key: str) -> list[tuple[int, str]]:
    """The entry's list under ``key`` as (line, text) pairs; missing: empty."""
    value = entry.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(entry.line, f"{key!r} must be a list")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _fail(_line(value, i), f"{key!r} holds {item!r}, not a name")
        out.append((_line(value, i), item.strip()))
    return out


# --- import ----------------------------------------------------------------------------------
@dataclass
class _GroupPlan:
    name: str
    members: list[Any] | None = None
    tool_groups: list[str] | None = None
    functions: list[str] | None = None
    agents: list[Agent] | None = None
    sources: list[str] | None = None
    shadow: bool = False


@dataclass
class _ApprovalPlan:
    tool: str
    mode: str
    approvers: list[str] = field(default_factory=list)
    shadow: bool = False


@dataclass
class ImportSummary:
    groups: list[str]
    approvals: list[str]
    shadow: list[str] = field(default_factory=list)  # entries marked shadow: not applied


@dataclass
class AccessPlan:
    """A checked file: what it would set."""

    groups: list[_GroupPlan]
    approvals: list[_ApprovalPlan]

    @property
    def has_shadow_rules(self) -> bool:
        return any(p.shadow for p in self.groups) or any(a.shadow for a in self.approvals)


def _shadow_flag(entry: _Map) -> bool:
    value = entry.get("shadow", False)
    if not isinstance(value, bool):
        raise _fail(entry.line, f"'shadow' must be true or false, not {value!r}")
    return value


def _tool_group_name(text: str) -> str | None:
    wanted = text.casefold()
    for group in selectors.registered_groups():
        if group.name.casefold() == wanted or group.label.casefold() == wanted:
            return group.name
    return None


def _plan_group(entry: Any, index: int) -> _GroupPlan:
    if not isinstance(entry, _Map):
        raise _fail(0, f"group #{index + 1} must be a mapping with a name")
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(entry.line, "a group needs a name")
    unknown = sorted(set(entry) - _GROUP_KEYS)
    if unknown:
        raise _fail(entry.line, f"group {name!r}: unknown key {unknown[0]!r}")
    plan = _GroupPlan(name=name.strip(), shadow=_shadow_flag(entry))
    if "members" in entry:
        if plan.name == EVERYONE:
            raise _fail(entry.line, f"{EVERYONE} has every user as a member; leave out members")
        users = get_user_model().objects
        plan.members = []
        for line, username in _names(entry, "members"):
            user = users.filter(username=username).first()
            if user is None:
                raise _fail(line, f"no user named {username!r}")
            plan.members.append(user)
    if "tools" in entry:
        plan.tool_groups, plan.functions = [], []
        registered = selectors.registered_tools()
        for line, text in _names(entry, "tools"):
            if text.startswith(GROUP_PREFIX):
                group_name = _tool_group_name(text[len(GROUP_PREFIX) :].strip())
                if group_name is None:
                    raise _fail(line, f"no tool group named {text[len(GROUP_PREFIX) :]!r}")
                plan.tool_groups.append(group_name)
            elif text in registered:
                plan.functions.append(text)
            else:
                raise _fail(line, f"no tool named {text!r} (a whole group is 'group:<name>')")
    if "agents" in entry:
        plan.agents = []
        for line, agent_name in _names(entry, "agents"):
            # A shipped profile is made lazily: named here, it is made now (issue 39). Only
            # admins' profiles: a member's own agent is shared by its owner, not by a file.
            agent = Agent.objects.filter(
                name=agent_name, owner__isnull=True
            ).first() or agent_shipped(agent_name)
            if agent is None:
                raise _fail(line, f"no agent profile named {agent_name!r}")
            plan.agents.append(agent)
    if "sources" in entry:
        known = set(ToolSource.objects.values_list("name", flat=True))
        plan.sources = []
        for line, source in _names(entry, "sources"):
            if source not in known:
                raise _fail(line, f"no imported source named {source!r}")
            plan.sources.append(source)
    return plan


def _plan_approval(entry: Any, index: int, group_names: set[str]) -> _ApprovalPlan:
    if not isinstance(entry, _Map):
        raise _fail(0, f"approval #{index + 1} must be a mapping with a tool")
    unknown = sorted(set(entry) - _APPROVAL_KEYS)
    if unknown:
        raise _fail(entry.line, f"unknown key {unknown[0]!r}")
    tool = entry.get("tool")
    if not isinstance(tool, str) or tool not in selectors.registered_tools():
        raise _fail(entry.line, f"no tool named {tool!r}")
    mode = entry.get("mode")
    if mode not in MODES:
        raise _fail(entry.line, f"{tool}: mode must be one of {', '.join(MODES)}, not {mode!r}")
    approvers = _names(entry, "approvers")
    for line, name in approvers:
        if name not in group_names:
            raise _fail(line, f"no group named {name!r}")
    if mode == "approver" and not approvers:
        raise _fail(entry.line, f"{tool}: approver mode needs at least one approver group")
    if mode != "approver" and approvers:
        raise _fail(entry.line, f"{tool}: approvers are for mode 'approver' only")
    return _ApprovalPlan(
        tool=tool,
        mode=str(mode),
        approvers=[n for _, n in approvers],
        shadow=_shadow_flag(entry),
    )


def access_plan(text: str) -> AccessPlan:
    """Check the whole file (every name, every line) and say what it would set; writes
    nothing. AccessImportError names the line of the first problem."""
    try:
        data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise AccessImportError(_("not valid YAML: %(error)s") % {"error": exc}) from exc
    if data is None:
        data = _Map()
    if not isinstance(data, dict):
        raise AccessImportError(_("expected a mapping with 'groups' and 'approvals'"))
    unknown = sorted(set(data) - {"groups", "approvals"})
    if unknown:
        raise _fail(_line(data), f"unknown key {unknown[0]!r}")
    entries, approvals = data.get("groups") or [], data.get("approvals") or []
    if not isinstance(entries, list) or not isinstance(approvals, list):
        raise _fail(_line(data), "'groups' and 'approvals' must be lists")
    plans = [_plan_group(entry, i) for i, entry in enumerate(entries)]
    seen: set[str] = set()
    for entry, plan in zip(entries, plans, strict=True):
        if plan.name.casefold() in seen:
            raise _fail(entry.line, f"group {plan.name!r} appears twice")
        seen.add(plan.name.casefold())
    group_names = set(Group.objects.values_list("name", flat=True)) | {p.name for p in plans}
    approval_plans = [_plan_approval(e, i, group_names) for i, e in enumerate(approvals)]
    return AccessPlan(plans, approval_plans)


def access_rules(plan: AccessPlan, *, shadow_only: bool = False) -> dict[str, Any]:
    """The plan's groups and approval rules as ``tools_app.services.policy`` reads them
    (``shadow_only``: the entries marked ``shadow: true`` alone)."""
    groups = [
        {
            "name": p.name,
            "members": None if p.members is None else sorted(u.username for u in p.members),
            "groups": p.tool_groups,
            "functions": p.functions,
            "sources": p.sources,
        }
        for p in plan.groups
        if p.shadow or not shadow_only
    ]
    approvals = [
        {"tool": a.tool, "mode": a.mode, "approvers": sorted(a.approvers)}
        for a in plan.approvals
        if a.shadow or not shadow_only
    ]
    return {"groups": groups, "approvals": approvals}


def access_import(text: str, *, actor: Any = None) -> ImportSummary:
    """Check the whole file, then apply it in one transaction (all or nothing). Entries
    marked ``shadow: true`` are left out (they are for the shadow policy)."""
    with transaction.atomic():
        plan = access_plan(text)
        plans = [p for p in plan.groups if not p.shadow]
        approval_plans = [a for a in plan.approvals if not a.shadow]
        shadow = [p.name for p in plan.groups if p.shadow]
        shadow += [a.tool for a in plan.approvals if a.shadow]
        live_groups = set(Group.objects.values_list("name", flat=True)) | {p.name for p in plans}
        for approval in approval_plans:
            for name in approval.approvers:
                if name not in live_groups:
                    raise AccessImportError(
                        f"{approval.tool}: the group {name!r} is in a shadow entry only"
                    )
        for plan_group in plans:
            _apply_group(plan_group, actor)
        for approval in approval_plans:
            _apply_approval(approval)
        if approval_plans:
            ToolConfigVersion.bump()
        if plans or approval_plans:
            audit_people_change(
                user=actor,
                subject="access import",
                action="imported",
                after={
                    "groups": [p.name for p in plans],
                    "approvals": [a.tool for a in approval_plans],
                },
            )
    return ImportSummary([p.name for p in plans], [a.tool for a in approval_plans], shadow)


def _apply_group(plan: _GroupPlan, actor: Any) -> None:
    group = everyone_group() if plan.name == EVERYONE else None
    if group is None:
        group, _ = Group.objects.get_or_create(name=plan.name)
    if plan.members is not None:
        group.user_set.set(plan.members)
    if plan.tool_groups is not None or plan.sources is not None:
        current = group_grants(group)
        grants_set(
            actor=actor,
            group=group,
            groups=current[ToolGrant.Kind.GROUP] if plan.tool_groups is None else plan.tool_groups,
            functions=current[ToolGrant.Kind.FUNCTION]
            if plan.functions is None
            else plan.functions,
            sources=current[ToolGrant.Kind.SOURCE] if plan.sources is None else plan.sources,
            audit=False,
        )
    if plan.agents is not None:
        shared = group.agent_profiles.filter(owner__isnull=False)  # members' shares stay
        group.agent_profiles.set([*plan.agents, *shared])


def _apply_approval(plan: _ApprovalPlan) -> None:
    config, _ = ToolFunctionConfig.objects.get_or_create(name=plan.tool)
    config.approval_mode = plan.mode
    config.save(update_fields=["approval_mode", "updated_at"])
    config.approver_groups.set(Group.objects.filter(name__in=plan.approvers))
