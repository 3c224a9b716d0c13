"""Writes for people and groups, each checked then done (``check_*`` raises ``PeopleError``
with the sentence the admin sees) and audited (``audit_people_change``).

Groups are Django's ``auth.Group``. "Everyone" holds every user without a membership row: a
user's groups are ``user.groups`` plus Everyone (``user_groups``). Admins are staff. Two
rules keep an admin from locking everyone out: nobody deactivates or un-staffs themselves,
and the last active staff account stays. Two more keep the auditor permission with the
superusers who hand it out: only a superuser changes a superuser's account, or the members
or permissions of a group that carries permissions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import send_mail
from django.db import transaction
from django.urls import reverse
from django.utils import translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from chat_app.models import Agent
from platform_app.preferences.services import preferences_get
from tools_app.services.audit import AUDIT_CONVERSATIONS_PERMISSION, audit_people_change

# The lookup lives below the apps (binding needs it); re-exported here for the People pages.
from tools_app.services.grants import EVERYONE as EVERYONE
from tools_app.services.grants import GrantError, grants_set, group_grants
from tools_app.services.grants import everyone_group as everyone_group
from tools_app.services.grants import user_groups as user_groups


class PeopleError(Exception):
    """A change refused, with the reason the admin reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_everyone(group: Group) -> bool:
    return group.name == EVERYONE


def group_carries_permissions(group: Group) -> bool:
    return group.permissions.exists()


def auditor_permission() -> Permission:
    app_label, codename = AUDIT_CONVERSATIONS_PERMISSION.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


# --- checks ----------------------------------------------------------------------------------
def _is_superuser(actor: Any) -> bool:
    return bool(getattr(actor, "is_superuser", False))


def check_may_change_user(*, actor: Any, user: Any) -> None:
    if user.is_superuser and not _is_superuser(actor):
        raise PeopleError(
            _("Only a superuser may change the superuser %(get_username)s.")
            % {"get_username": user.get_username()}
        )


def check_may_change_group_members(*, actor: Any, group: Group) -> None:
    if is_everyone(group):
        raise PeopleError(_("Everyone has every user as a member; there is nothing to change."))
    if group_carries_permissions(group) and not _is_superuser(actor):
        raise PeopleError(
            _(
                "“%(name)s” carries permissions (such as reading others' conversations): only a "
                "superuser changes its members."
            )
            % {"name": group.name}
        )


def _other_active_staff(user: Any) -> bool:
    users = get_user_model().objects.filter(is_staff=True, is_active=True)
    return users.exclude(pk=user.pk).exists()


def check_keeps_an_admin(*, actor: Any, user: Any, active: bool, staff: bool) -> None:
    """Refuse what would lock the actor or everyone out of the People pages."""
    if user.pk == actor.pk and not active:
        raise PeopleError(_("You cannot deactivate your own account."))
    if user.pk == actor.pk and not staff:
        raise PeopleError(_("You cannot remove your own admin (staff) role."))
    losing_admin = user.is_active and user.is_staff and not (active and staff)
    if losing_admin and not _other_active_staff(user):
        raise PeopleError(
            _("%(get_username)s is the last active admin; keep at least one.")
            % {"get_username": user.get_username()}
        )


def _check_groups_assignable(*, actor: Any, before: set[Group], after: set[Group]) -> None:
    for group in before ^ after:
        check_may_change_group_members(actor=actor, group=group)


def email_enabled() -> bool:
    return bool(settings.EMAIL_ENABLED)


def password_login_enabled() -> bool:
    """False with OIDC_LOCAL_LOGIN=false: people sign in only through single sign-on, so
    the People pages set no passwords and issue no links."""
    return bool(settings.OIDC_LOCAL_LOGIN)


def check_password_login() -> None:
    if not password_login_enabled():
        raise PeopleError(
            _(
                "Password login is off (OIDC_LOCAL_LOGIN=false): people sign in with single "
                "sign-on, and their account is made at their first sign-in."
            )
        )


# --- one-time set-password links ------------------------------------------------------------
@dataclass(frozen=True)
class PasswordLink:
    url: str
    emailed: bool


def password_link_url(*, user: Any, base_url: str) -> str:
    """A link that sets the user's password once: the token is made from the password hash
    and the last login, so it stops working when either changes (and after
    PASSWORD_RESET_TIMEOUT, three days by default)."""
    uidb64 = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)
    path = reverse("account:set_password", kwargs={"uidb64": uidb64, "token": token})
    return base_url.rstrip("/") + path


def _password_link_email(*, user: Any, url: str, invited: bool) -> bool:
    if not (email_enabled() and user.email):
        return False
    # In the person's own language once they chose one; a new person's, in the admin's.
    chosen = preferences_get(user=user)[1] if not invited else ""
    with translation.override(chosen or translation.get_language() or settings.LANGUAGE_CODE):
        name = {"username": user.get_username()}
        if invited:
            subject = gettext("You are invited to Control Center")
            lead = gettext("An admin created the account “%(username)s” for you.") % name
        else:
            subject = gettext("Set a new Control Center password")
            lead = gettext("An admin reset the password of your account “%(username)s”.") % name
        body = (
            lead
            + "\n\n"
            + gettext("Choose your password here (the link works once):")
            + f"\n{url}\n\n"
            + gettext("If you did not expect this, ignore this message.")
            + "\n"
        )
    send_mail(subject, body, None, [user.email])
    return True


def _link(*, user: Any, base_url: str, invited: bool) -> PasswordLink:
    url = password_link_url(user=user, base_url=base_url)
    return PasswordLink(url=url, emailed=_password_link_email(user=user, url=url, invited=invited))


# --- users ---------------------------------------------------------------------------------
def _user_state(user: Any) -> dict[str, Any]:
    return {
        "username": user.get_username(),
        "first_name": user.first_name,
        "last_name": user.last_name,
        "email": user.email,
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "groups": sorted(user.groups.values_list("name", flat=True)),
    }


@transaction.atomic
def user_create(
    *,
    actor: Any,
    username: str,
    first_name: str = "",
    last_name: str = "",
    email: str = "",
    is_staff: bool = False,
    groups: Iterable[Group] = (),
    password: str | None = None,
    base_url: str = "",
) -> tuple[Any, PasswordLink | None]:
    """A new account, with a password set now, or (``password`` None) invited: no usable
    password until they follow the one-time link, which is returned (and emailed when email
    is configured and the user has an address)."""
    check_password_login()
    chosen = {g for g in groups if not is_everyone(g)}
    _check_groups_assignable(actor=actor, before=set(), after=chosen)
    user = get_user_model().objects.create_user(
        username=username,
        email=email,
        password=password,
        first_name=first_name,
        last_name=last_name,
        is_staff=is_staff,
    )
    user.groups.set(chosen)  # create_user(password=None) leaves no usable password
    invited = password is None
    audit_people_change(
        user=actor,
        subject=f"user {user.get_username()}",
        action="invited" if invited else "created",
        after=_user_state(user),
    )
    link = None
    if invited:
        link = _link(user=user, base_url=base_url, invited=True)
    return user, link


@transaction.atomic
def user_update(
    *,
    actor: Any,
    user: Any,
    first_name: str,
    last_name: str,
    email: str,
    is_staff: bool,
    groups: Iterable[Group],
) -> Any:
    check_may_change_user(actor=actor, user=user)
    check_keeps_an_admin(actor=actor, user=user, active=user.is_active, staff=is_staff)
    chosen = {g for g in groups if not is_everyone(g)}
    _check_groups_assignable(actor=actor, before=set(user.groups.all()), after=chosen)
    before = _user_state(user)
    user.first_name, user.last_name, user.email = first_name, last_name, email
    user.is_staff = is_staff
    user.save(update_fields=["first_name", "last_name", "email", "is_staff"])
    user.groups.set(chosen)
    after = _user_state(user)
    if after != before:
        staff_changed = before["is_staff"] != after["is_staff"]
        groups_changed = before["groups"] != after["groups"]
        action = "staff_changed" if staff_changed else "groups_changed" if groups_changed else ""
        audit_people_change(
            user=actor,
            subject=f"user {user.get_username()}",
            action=action or "changed",
            before=before,
            after=after,
        )
    return user


@transaction.atomic
def user_set_active(*, actor: Any, user: Any, active: bool) -> Any:
    """Deactivate (they cannot log in; their open sessions, API tokens and schedules stop
    working) or reactivate an account. Nothing is deleted."""
    check_may_change_user(actor=actor, user=user)
    check_keeps_an_admin(actor=actor, user=user, active=active, staff=user.is_staff)
    if user.is_active == active:
        return user
    user.is_active = active
    user.save(update_fields=["is_active"])
    audit_people_change(
        user=actor,
        subject=f"user {user.get_username()}",
        action="reactivated" if active else "deactivated",
        before={"is_active": not active},
        after={"is_active": active},
    )
    return user


@transaction.atomic
def user_password_reset(*, actor: Any, user: Any, base_url: str) -> PasswordLink:
    """The current password stops working at once (and with it the user's open sessions);
    the returned one-time link sets a new one. Also a fresh invitation for someone whose
    first link expired or got lost."""
    check_may_change_user(actor=actor, user=user)
    check_password_login()
    if user.pk == actor.pk:
        raise PeopleError(_("Change your own password on the Password page."))
    if not user.is_active:
        raise PeopleError(
            _("%(get_username)s is deactivated; reactivate the account first.")
            % {"get_username": user.get_username()}
        )
    never_signed_in = user.last_login is None and not user.has_usable_password()
    user.set_unusable_password()
    user.save(update_fields=["password"])
    link = _link(user=user, base_url=base_url, invited=never_signed_in)
    audit_people_change(
        user=actor,
        subject=f"user {user.get_username()}",
        action="password_link",
        before={"password": "set"},
        after={"password": "a one-time link was issued", "emailed": link.emailed},
    )
    return link


# --- groups --------------------------------------------------------------------------------
def _check_group_name(name: str, *, group: Group | None = None) -> str:
    name = name.strip()
    if not name:
        raise PeopleError(_("A group needs a name."))
    if name.casefold() == EVERYONE.casefold() and (group is None or not is_everyone(group)):
        raise PeopleError(
            _("“%(EVERYONE)s” is the group every user is in; choose another name.")
            % {"EVERYONE": EVERYONE}
        )
    taken = Group.objects.filter(name__iexact=name)
    if group is not None:
        taken = taken.exclude(pk=group.pk)
    if taken.exists():
        raise PeopleError(_("A group named “%(name)s” exists already.") % {"name": name})
    return name


@transaction.atomic
def group_create(*, actor: Any, name: str) -> Group:
    name = _check_group_name(name)
    group = Group.objects.create(name=name)
    audit_people_change(user=actor, subject=f"group {name}", action="created", after={"name": name})
    return group


@transaction.atomic
def group_rename(*, actor: Any, group: Group, name: str) -> Group:
    if is_everyone(group):
        raise PeopleError(_("“%(EVERYONE)s” cannot be renamed.") % {"EVERYONE": EVERYONE})
    name = _check_group_name(name, group=group)
    if name == group.name:
        return group
    before = group.name
    group.name = name
    group.save(update_fields=["name"])
    audit_people_change(
        user=actor,
        subject=f"group {name}",
        action="renamed",
        before={"name": before},
        after={"name": name},
    )
    return group


@transaction.atomic
def group_delete(*, actor: Any, group: Group) -> None:
    """Its members lose what it granted; the users themselves stay."""
    if is_everyone(group):
        raise PeopleError(
            _("“%(EVERYONE)s” cannot be deleted: every user is in it.") % {"EVERYONE": EVERYONE}
        )
    if group_carries_permissions(group) and not _is_superuser(actor):
        raise PeopleError(
            _("“%(name)s” carries permissions: only a superuser deletes it.") % {"name": group.name}
        )
    members = sorted(group.user_set.values_list("username", flat=True))
    name = group.name
    group.delete()
    audit_people_change(
        user=actor,
        subject=f"group {name}",
        action="deleted",
        before={"name": name, "members": members},
    )


@transaction.atomic
def group_members_change(
    *, actor: Any, group: Group, add: Iterable[Any] = (), remove: Iterable[Any] = ()
) -> list[str]:
    """Add and remove members; returns the member usernames after the change."""
    check_may_change_group_members(actor=actor, group=group)
    add, remove = list(add), list(remove)
    for user in [*add, *remove]:
        check_may_change_user(actor=actor, user=user)
    before = sorted(group.user_set.values_list("username", flat=True))
    group.user_set.add(*add)
    group.user_set.remove(*remove)
    after = sorted(group.user_set.values_list("username", flat=True))
    if after != before:
        audit_people_change(
            user=actor,
            subject=f"group {group.name}",
            action="members_changed",
            before={"members": before},
            after={"members": after},
        )
    return after


@transaction.atomic
def group_auditor_set(*, actor: Any, group: Group, auditor: bool) -> None:
    """Give a group (or take from it) the permission to read others' conversations."""
    if not _is_superuser(actor):
        raise PeopleError(_("Only a superuser gives or takes the auditor permission."))
    if is_everyone(group) and auditor:
        raise PeopleError(
            _("“%(EVERYONE)s” cannot be an auditor group: that would be every user.")
            % {"EVERYONE": EVERYONE}
        )
    permission = auditor_permission()
    had = group.permissions.filter(pk=permission.pk).exists()
    if had == auditor:
        return
    if auditor:
        group.permissions.add(permission)
    else:
        group.permissions.remove(permission)
    audit_people_change(
        user=actor,
        subject=f"group {group.name}",
        action="auditor_changed",
        before={"auditor": had},
        after={"auditor": auditor},
    )


# --- grants --------------------------------------------------------------------------------
def group_agent_names(group: Group) -> list[str]:
    """The admins' profiles given to the group (members' profiles shared with it are theirs
    to share, not grants: chat_app/services/member_agents)."""
    return sorted(
        Agent.objects.filter(groups=group, owner__isnull=True).values_list("name", flat=True)
    )


@transaction.atomic
def group_grants_set(
    *,
    actor: Any,
    group: Group,
    tool_groups: Iterable[str] = (),
    functions: Iterable[str] = (),
    sources: Iterable[str] = (),
    agents: Iterable[str] = (),
) -> None:
    """Replace what the group's members may use: tool groups (whole), single functions,
    imported sources and agent profiles, all by name. One audit record with the change;
    unknown names are refused (``PeopleError``) and nothing is changed."""
    agents = sorted(set(agents))
    found = {a.name: a for a in Agent.objects.filter(name__in=agents, owner__isnull=True)}
    missing = [name for name in agents if name not in found]
    if missing:
        raise PeopleError(_("No agent profile named %(missing)s.") % {"missing": f"{missing[0]!r}"})
    before = {f"{k}s": v for k, v in group_grants(group).items()}
    before["agents"] = group_agent_names(group)
    try:
        after = grants_set(
            actor=actor,
            group=group,
            groups=tool_groups,
            functions=functions,
            sources=sources,
            audit=False,
        )
    except GrantError as exc:
        raise PeopleError(
            _("%(upper)s%(str)s.") % {"upper": str(exc)[0].upper(), "str": str(exc)[1:]}
        ) from None
    shared = group.agent_profiles.filter(owner__isnull=False)  # members' shares stay
    group.agent_profiles.set([*found.values(), *shared])
    state = {f"{k}s": v for k, v in after.items()}
    state["agents"] = agents
    if state != before:
        audit_people_change(
            user=actor,
            subject=f"group {group.name}",
            action="grants_changed",
            before=before,
            after=state,
        )


def group_sharing_set(*, actor: Any, group: Group, forbidden: bool) -> None:
    """May members share their agent profiles and prompts with this group (an admin's switch)?
    Forbidding it also hides what was shared with the group before."""
    from chat_app.services.member_agents import group_sharing_forbidden
    from chat_app.services.member_agents import group_sharing_set as sharing_set

    had = group_sharing_forbidden(group)
    if had == forbidden:
        return
    sharing_set(group=group, forbidden=forbidden)
    audit_people_change(
        user=actor,
        subject=f"group {group.name}",
        action="sharing_changed",
        before={"sharing_forbidden": had},
        after={"sharing_forbidden": forbidden},
    )
