"""Reads for the People pages: users with their groups and roles, groups with their members."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet

from platform_app.models import SSOIdentity
from platform_app.people.services import EVERYONE, everyone_group
from tools_app.services.audit import AUDIT_CONVERSATIONS_PERMISSION

_AUDITOR_APP, _AUDITOR_CODENAME = AUDIT_CONVERSATIONS_PERMISSION.split(".")
# Approvers are the members of a group some tool function names as its approvers: a
# many-to-many field of this name to Group (tools_app's function configuration). Found by
# name so that this page needs no import of it and shows the role once it exists.
APPROVER_FIELD = "approver_groups"


def _auditor_q(prefix: str = "") -> Q:
    return Q(
        **{
            f"{prefix}permissions__content_type__app_label": _AUDITOR_APP,
            f"{prefix}permissions__codename": _AUDITOR_CODENAME,
        }
    )


def auditor_group_ids() -> set[int]:
    return set(Group.objects.filter(_auditor_q()).values_list("pk", flat=True))


def approver_group_ids() -> set[int]:
    ids: set[int] = set()
    for relation in Group._meta.related_objects:
        if relation.many_to_many and relation.field.name == APPROVER_FIELD:
            model = relation.field.model
            ids |= set(
                model._default_manager.exclude(**{f"{APPROVER_FIELD}__isnull": True}).values_list(
                    APPROVER_FIELD, flat=True
                )
            )
    return ids


@dataclass
class UserRow:
    user: Any
    groups: list[Group]
    roles: list[str] = field(default_factory=list)
    sso: bool = False  # linked to a single sign-on identity

    @property
    def status(self) -> str:
        """active, deactivated, invited (never signed in, no password yet) or "password link"
        (a reset is pending). An SSO account needs no password."""
        user = self.user
        if not user.is_active:
            return "deactivated"
        if user.has_usable_password() or self.sso:
            return "active"
        return "invited" if user.last_login is None else "password link"


@dataclass(frozen=True)
class _RoleSources:
    approver_groups: set[int]
    auditor_groups: set[int]
    auditor_users: set[int]  # the permission given to the user directly (Django admin)

    @classmethod
    def load(cls) -> _RoleSources:
        direct = get_user_model().objects.filter(_auditor_q("user_"))
        return cls(
            approver_group_ids(), auditor_group_ids(), set(direct.values_list("pk", flat=True))
        )

    def roles(self, user: Any, group_ids: set[int]) -> list[str]:
        roles = []
        if user.is_superuser:
            roles.append("superuser")
        if user.is_staff:
            roles.append("admin")
        if group_ids & self.approver_groups:
            roles.append("approver")
        if user.is_superuser or group_ids & self.auditor_groups or user.pk in self.auditor_users:
            roles.append("auditor")
        return roles


def users_rows(*, q: str = "", show: str = "active") -> list[UserRow]:
    """The People list: ``q`` matches username, name or email; ``show`` is active, inactive
    or all."""
    users: QuerySet[Any] = (
        get_user_model()
        .objects.order_by("username")
        .prefetch_related(Prefetch("groups", queryset=Group.objects.order_by("name")))
        .annotate(has_sso=Exists(SSOIdentity.objects.filter(user=OuterRef("pk"))))
    )
    if show == "active":
        users = users.filter(is_active=True)
    elif show == "inactive":
        users = users.filter(is_active=False)
    if q:
        users = users.filter(
            Q(username__icontains=q)
            | Q(first_name__icontains=q)
            | Q(last_name__icontains=q)
            | Q(email__icontains=q)
        )
    sources = _RoleSources.load()
    rows = []
    for user in users:
        groups = list(user.groups.all())
        roles = sources.roles(user, {g.pk for g in groups})
        rows.append(UserRow(user, groups, roles, sso=user.has_sso))
    return rows


def user_row(user: Any) -> UserRow:
    groups = list(user.groups.order_by("name"))
    roles = _RoleSources.load().roles(user, {g.pk for g in groups})
    return UserRow(user, groups, roles, sso=user.sso_identities.exists())


@dataclass
class GroupRow:
    group: Group
    members: int
    everyone: bool
    auditor: bool
    approver: bool


def groups_rows() -> list[GroupRow]:
    """Every group, Everyone first, with its member count and roles."""
    everyone = everyone_group()
    approvers, auditors = approver_group_ids(), auditor_group_ids()
    groups = Group.objects.annotate(n=Count("user", distinct=True)).order_by("name")
    rows = [
        GroupRow(g, int(g.n), g.pk == everyone.pk, g.pk in auditors, g.pk in approvers)  # type: ignore[attr-defined]
        for g in groups
    ]
    rows.sort(key=lambda r: not r.everyone)
    return rows


def groups_locked_for(actor: Any) -> set[int]:
    """Groups whose members ``actor`` may not change: Everyone (implicit), and those that
    carry permissions unless the actor is a superuser."""
    locked = set(Group.objects.filter(name=EVERYONE).values_list("pk", flat=True))
    if not getattr(actor, "is_superuser", False):
        carrying = Group.objects.filter(permissions__isnull=False).distinct()
        locked |= set(carrying.values_list("pk", flat=True))
    return locked


def group_other_permissions(group: Group) -> list[str]:
    """Permissions the group carries besides the auditor one (given in the Django admin)."""
    others = group.permissions.exclude(
        content_type__app_label=_AUDITOR_APP, codename=_AUDITOR_CODENAME
    )
    return [str(p.name) for p in others.order_by("content_type__app_label", "codename")]


def group_is_auditor(group: Group) -> bool:
    return group.permissions.filter(
        content_type__app_label=_AUDITOR_APP, codename=_AUDITOR_CODENAME
    ).exists()


def group_members(group: Group) -> QuerySet[Any]:
    return group.user_set.order_by("username")


def users_not_in(group: Group) -> QuerySet[Any]:
    return (
        get_user_model().objects.filter(is_active=True).exclude(groups=group).order_by("username")
    )


def active_user_count() -> int:
    return int(get_user_model().objects.filter(is_active=True).count())


# --- the grant editor ------------------------------------------------------------------------
@dataclass
class GrantToolGroup:
    name: str
    label: str
    description: str
    whole: bool
    functions: list[tuple[str, str, bool]]  # (name, description, granted on its own)
    # What is granted here but no member could run (issue 39): the group switched off, or
    # functions its settings keep for admins (the Docker group's "Admins only").
    switched_off: bool = False
    refused: list[str] = field(default_factory=list)
    granted: int = 0  # functions granted, whole group or one by one

    @property
    def admins_only(self) -> bool:
        return bool(self.granted) and not self.switched_off and len(self.refused) == self.granted


@dataclass
class GrantEditor:
    tool_groups: list[GrantToolGroup]
    sources: list[tuple[str, str, str, bool]]  # (name, label, kind label, granted)
    agents: list[tuple[str, str, bool]]  # (name, description, granted)
    counts: dict[str, int]


def grant_editor(group: Group, posted: Any = None) -> GrantEditor:
    """Every built-in tool group with its functions, every imported source and every agent
    profile, ticked as the group is granted them (or as ``posted``, a refused form)."""
    from chat_app.models import Agent
    from tools_app import selectors as tool_selectors
    from tools_app.models import ToolSource
    from tools_app.services.decision import refused_to_members
    from tools_app.services.grants import group_grants

    if posted is not None:
        granted = {
            "group": set(posted.getlist("tool_group")),
            "function": set(posted.getlist("function")),
            "source": set(posted.getlist("source")),
        }
        agent_names = set(posted.getlist("agent"))
    else:
        granted = {k: set(v) for k, v in group_grants(group).items()}
        agent_names = set(
            Agent.objects.filter(groups=group, owner__isnull=True).values_list("name", flat=True)
        )
    tool_groups = []
    for tool_group in tool_selectors.registered_groups():
        if any(getattr(t, "source_name", "") for t in tool_group.tools):
            continue  # an imported source: listed below, granted whole
        if not tool_group.tools and tool_group.name not in granted["group"]:
            continue
        ordered = sorted(tool_group.tools, key=lambda t: t.tool_name)
        functions = [
            (t.tool_name, t.description(), t.tool_name in granted["function"]) for t in ordered
        ]
        whole = tool_group.name in granted["group"]
        given = [t for t in ordered if whole or t.tool_name in granted["function"]]
        tool_groups.append(
            GrantToolGroup(
                name=tool_group.name,
                label=tool_group.label,
                description=tool_group.description,
                whole=whole,
                functions=functions,
                switched_off=bool(given) and not tool_selectors.group_enabled(tool_group.name),
                refused=refused_to_members(given) if given else [],
                granted=len(given),
            )
        )
    sources = [
        (s.name, s.label or s.name, s.get_kind_display(), s.name in granted["source"])
        for s in ToolSource.objects.order_by("name")
    ]
    # The admins' profiles: a member's own is theirs to share (My agents), not granted here.
    agents = [
        (a.name, a.description, a.name in agent_names)
        for a in Agent.objects.filter(owner__isnull=True).order_by("name")
    ]
    counts = {
        "tool_groups": sum(g.whole for g in tool_groups),
        "functions": sum(f[2] for g in tool_groups for f in g.functions),
        "sources": sum(s[3] for s in sources),
        "agents": sum(a[2] for a in agents),
    }
    return GrantEditor(tool_groups, sources, agents, counts)
