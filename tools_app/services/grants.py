"""Grants: which tools each person may use.

A group's grants (``ToolGrant``) name whole tool groups, single functions and imported sources
(MCP servers, OpenAPI documents). A person may use the union of what their groups are granted,
"Everyone" included (every user is in it without a membership row); staff may use everything.
A tool group, function or source that no grant names is for admins only.

Binding asks ``granted_tools`` on every call, so each process keeps every person's granted set
in memory under the tool configuration's token (``tools_app.selectors``) — no query of its
own. Whatever changes a grant moves the token on, from any process: grants themselves
(``ConfigQuerySet`` and signals), group renames and deletions, memberships, and a change to a
person's staff flag (``grants_track``, connected by ``tools_app.apps``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _

from infra.prepared import Prepared
from tools_app import selectors
from tools_app.models import ToolConfigVersion, ToolGrant, ToolSource
from tools_app.registry import GROUPS
from tools_app.services.audit import audit_people_change

# The group every user is in without a membership row (made by a migration, and again by the
# People pages if someone deleted it). Matched by name.
EVERYONE = "Everyone"

NOT_GRANTED = "not_granted"  # the policy verdict of a call refused for want of a grant

# What "Everyone" is granted on a fresh install (the migration tools_app 0011 writes the same
# lists): the low-risk tools. Shell, dev, file writes, docker, HTTP, browser, webhooks and
# imported sources stay with the admins until an admin grants them.
FRESH_INSTALL_GROUPS = (
    "time",
    "memory",
    "docs",
    "skills",
    "research",
    "agent",
    "subagents",
    "schedules",
)
FRESH_INSTALL_FUNCTIONS = ("file_read", "file_list")
# Granted to Everyone after grants came, on every install (tools_app 0026): it names only tools
# the person may already use (issue 38).
EVERYONE_GROUPS_SINCE = ("tool_search",)


def user_groups(user: Any) -> QuerySet[Group]:
    """The user's groups, Everyone included: what their grants are the union of. One query."""
    return Group.objects.filter(Q(user=user) | Q(name=EVERYONE)).distinct().order_by("name")


def everyone_group() -> Group:
    """The group every user is in (made again if someone deleted it)."""
    group, _ = Group.objects.get_or_create(name=EVERYONE)
    return group


def not_granted_reason(tool: str) -> str:
    return f"{tool} is not granted to you — ask an admin"


class NothingGranted(frozenset[str]):
    """The grants of a deactivated account: none, whatever its groups say (binding names the
    reason: ``inactive_reason``)."""


INACTIVE = NothingGranted()


def inactive_reason() -> str:
    return "your account has been deactivated: no tool runs for it"


# --- the cached reads ----------------------------------------------------------------------
_lock = threading.Lock()
_token: str | None = None
_by_group: dict[int, frozenset[str]] = {}  # group id → tool names its grants cover
_everyone: int | None = None
_people: dict[int, frozenset[str] | None] = {}  # user id → granted tool names (None: all)
_MAX_PEOPLE = 20_000  # cached at once per process; past it the cache starts again


K = TypeVar("K", int, str)


def grants_expand(rows: Iterable[tuple[K, str, str]]) -> dict[K, frozenset[str]]:
    """Each group's grants (group key, kind, name) as the tool names they cover now
    (imported ones as registered)."""
    by_source: dict[str, set[str]] = {}
    for group in list(GROUPS.values()):
        for tool in group.tools:
            source = getattr(tool, "source_name", "")
            if source:
                by_source.setdefault(source, set()).add(tool.tool_name)
    out: dict[K, set[str]] = {}
    for group_id, kind, name in rows:
        names = out.setdefault(group_id, set())
        if kind == ToolGrant.Kind.FUNCTION:
            names.add(name)
        elif kind == ToolGrant.Kind.GROUP:
            tool_group = GROUPS.get(name)
            if tool_group is not None:
                names.update(t.tool_name for t in tool_group.tools)
        elif kind == ToolGrant.Kind.SOURCE:
            names.update(by_source.get(name, ()))
    return {k: frozenset(v) for k, v in out.items()}


def _current(token: str | None) -> tuple[dict[int, frozenset[str]], int | None]:
    """The per-group index for ``token`` (rebuilt, and the people forgotten, when it moved)."""
    global _token, _by_group, _everyone
    with _lock:
        if token is not None and token == _token:
            return _by_group, _everyone
    # Read after the token: a copy may be newer than its token, never older.
    rows = list(ToolGrant.objects.order_by().values_list("group_id", "kind", "name"))
    everyone = Group.objects.filter(name=EVERYONE).values_list("pk", flat=True).first()
    by_group = grants_expand(rows)
    if token is not None:
        with _lock:
            _token, _by_group, _everyone = token, by_group, everyone
            _people.clear()
    return by_group, everyone


def granted_tools(
    user_id: int | None, snapshot: selectors.ConfigSnapshot | None = None
) -> frozenset[str] | None:
    """The tool names the person may use (None: every tool — an admin). Nobody (no user):
    nothing. From memory while the configuration token stands. ``snapshot``: the
    configuration the caller just read (saves reading the token again)."""
    if user_id is None:
        return frozenset()
    token = (snapshot or selectors.config_snapshot()).token
    by_group, everyone = _current(token)
    if token is not None:
        with _lock:
            if _token == token and user_id in _people:
                return _people[user_id]
    granted = _compute(user_id, by_group, everyone)
    if token is not None:
        with _lock:
            if _token == token:
                if len(_people) >= _MAX_PEOPLE:
                    _people.clear()
                _people[user_id] = granted
    return granted


def _person_row(user_id: int) -> QuerySet[Any]:
    from django.contrib.auth import get_user_model

    return (
        get_user_model()
        .objects.filter(pk=user_id)
        .values_list("is_staff", "is_superuser", "is_active", "username")
        .order_by("pk")[:1]
    )


# Read for each person once per configuration token (their first page or call after a
# change): compiled once per process (infra.prepared).
_PERSON = Prepared(_person_row, user_id=int)
_GROUPS = Prepared(
    lambda user_id: (
        Group.objects.filter(Q(user__pk=user_id) | Q(name=EVERYONE))
        .order_by("pk")
        .values_list("pk", flat=True)
        .distinct()
    ),
    user_id=int,
)


def grants_of_person(
    user_id: int,
    by_group: dict[K, frozenset[str]],
    groups_of: Callable[[str], Iterable[K]],
) -> frozenset[str] | None:
    """The union of the person's groups' grants: ``groups_of(username)`` names the groups
    (keys of ``by_group``). Staff: everything (None); a deactivated account: nothing."""
    row = _PERSON.one(user_id=user_id)
    if row is None:
        return frozenset()
    if not row[2]:  # deactivated: every way in is refused, staff or not (a save moves the token)
        return INACTIVE
    if row[0] or row[1]:
        return None
    names: set[str] = set()
    for group in groups_of(row[3]):
        names |= by_group.get(group, frozenset())
    return frozenset(names)


def person_group_ids(user_id: int) -> tuple[int, ...]:
    """The person's groups now, Everyone included: within a unit of work that pinned the
    configuration (a model round, a binding) read once per token, which memberships move
    on. Grants and usage (its records' shares, the quotas) ask for the same."""

    def build() -> tuple[int, ...]:
        return tuple(_GROUPS.rows(user_id=user_id))

    return selectors.config_memo(("person groups", user_id), build)


def _compute(
    user_id: int, by_group: dict[int, frozenset[str]], everyone: int | None
) -> frozenset[str] | None:
    def groups_of(username: str) -> set[int]:
        return set(person_group_ids(user_id))  # Everyone's id is among them when it exists

    return grants_of_person(user_id, by_group, groups_of)


def may_use(user_id: int | None, tool: str) -> bool:
    granted = granted_tools(user_id)
    return granted is None or tool in granted


def grants_narrow(user_id: int | None, names: Iterable[str] | None) -> list[str] | None:
    """``names`` (None: every tool) within what the person may use, in ``names``' order."""
    granted = granted_tools(user_id)
    if granted is None:
        return None if names is None else list(names)
    if names is None:
        return sorted(granted)
    return [name for name in names if name in granted]


def grants_forget() -> None:
    """Forget every cached grant in this process (tests)."""
    global _token
    with _lock:
        _token = None
        _people.clear()


# --- what the Tools Manager and the editor show ---------------------------------------------
def granted_anywhere() -> tuple[set[str], set[str], set[str]]:
    """(tool groups, functions, sources) some group is granted: the rest is admins only."""
    groups: set[str] = set()
    functions: set[str] = set()
    sources: set[str] = set()
    for kind, name in ToolGrant.objects.order_by().values_list("kind", "name").distinct():
        {"group": groups, "function": functions, "source": sources}.get(kind, set()).add(name)
    return groups, functions, sources


def group_grants(group: Group) -> dict[str, list[str]]:
    """The group's grants by kind, names sorted: {"group": […], "function": […], "source": […]}."""
    out: dict[str, list[str]] = {kind: [] for kind in ToolGrant.Kind.values}
    for kind, name in group.tool_grants.order_by("kind", "name").values_list("kind", "name"):
        out[kind].append(name)
    return out


# --- writes --------------------------------------------------------------------------------
class GrantError(ValueError):
    """A grant that names nothing known, with the sentence to show."""


def check_grant_names(
    *, groups: Iterable[str] = (), functions: Iterable[str] = (), sources: Iterable[str] = ()
) -> None:
    registered = selectors.registered_tools()
    known_groups = {g.name for g in selectors.registered_groups()}
    for name in groups:
        if name not in known_groups:
            raise GrantError(_("no tool group named %(name)s") % {"name": f"{name!r}"})
    for name in functions:
        if name not in registered:
            raise GrantError(_("no tool named %(name)s") % {"name": f"{name!r}"})
    known_sources = set(ToolSource.objects.values_list("name", flat=True))
    for name in sources:
        if name not in known_sources:
            raise GrantError(_("no imported source named %(name)s") % {"name": f"{name!r}"})


@transaction.atomic
def grants_set(
    *,
    actor: Any,
    group: Group,
    groups: Iterable[str] = (),
    functions: Iterable[str] = (),
    sources: Iterable[str] = (),
    audit: bool = True,
) -> dict[str, list[str]]:
    """Replace the group's grants with these (checked: unknown names are refused)."""
    wanted = {
        ToolGrant.Kind.GROUP.value: sorted(set(groups)),
        ToolGrant.Kind.FUNCTION.value: sorted(set(functions)),
        ToolGrant.Kind.SOURCE.value: sorted(set(sources)),
    }
    check_grant_names(
        groups=wanted["group"], functions=wanted["function"], sources=wanted["source"]
    )
    before = group_grants(group)
    if before == wanted:
        return wanted
    ToolGrant.objects.filter(group=group).delete()
    ToolGrant.objects.bulk_create(
        [ToolGrant(group=group, kind=kind, name=name) for kind, ns in wanted.items() for name in ns]
    )
    ToolConfigVersion.bump()  # also when only deletions happened
    if audit:
        audit_people_change(
            user=actor,
            subject=f"group {group.name}",
            action="grants_changed",
            before={f"{k}s": v for k, v in before.items()},
            after={f"{k}s": v for k, v in wanted.items()},
        )
    return wanted


def grants_forget_source(name: str) -> None:
    """A source is gone: so are its grants (one added again later under the same name starts
    granted to nobody, like any new source)."""
    ToolGrant.objects.filter(kind=ToolGrant.Kind.SOURCE, name=name).delete()


# --- what moves the token ------------------------------------------------------------------
_STAFF_FIELDS = {"is_staff", "is_superuser", "is_active"}


def _bump(sender: Any, **kwargs: Any) -> None:
    ToolConfigVersion.bump()


def _user_saved(sender: Any, update_fields: Any = None, **kwargs: Any) -> None:
    # A login saves last_login only: that changes no grant.
    if update_fields is None or _STAFF_FIELDS & set(update_fields):
        ToolConfigVersion.bump()


def _membership_changed(sender: Any, action: str, **kwargs: Any) -> None:
    if action in ("post_add", "post_remove", "post_clear"):
        ToolConfigVersion.bump()


def _source_deleted(sender: Any, instance: Any, **kwargs: Any) -> None:
    grants_forget_source(instance.name)


def grants_track() -> None:
    """Connect what changes a person's grants to the configuration token (``tools_app.apps``)."""
    from django.contrib.auth import get_user_model
    from django.db.models.signals import m2m_changed, post_delete, post_save

    from tools_app.models import config_track

    config_track(ToolGrant)
    user_model = get_user_model()
    post_save.connect(_bump, sender=Group, dispatch_uid="cc-grants-group-saved")
    post_delete.connect(_bump, sender=Group, dispatch_uid="cc-grants-group-deleted")
    post_save.connect(_user_saved, sender=user_model, dispatch_uid="cc-grants-user-saved")
    post_delete.connect(_bump, sender=user_model, dispatch_uid="cc-grants-user-deleted")
    m2m_changed.connect(
        _membership_changed,
        sender=user_model.groups.through,
        dispatch_uid="cc-grants-memberships",
    )
    post_delete.connect(_source_deleted, sender=ToolSource, dispatch_uid="cc-grants-source-gone")
