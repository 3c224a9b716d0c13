"""What an SSO login does to the accounts: find (or make) the person, refuse a deactivated one,
and bring their groups and admin flag in line with the provider's groups claim.

Rules (docs/ADMIN_GUIDE.md "Single sign-on"):
- An identity is the provider's ``iss`` + ``sub``. The first login makes an account named from
  the username claim (``OIDC_USERNAME_CLAIM``, else ``email``, else ``sub``), NFKC normalised.
  An account of that name that no identity signs in to yet is taken over only with
  ``OIDC_LINK_EXISTING_USERS``. A name that only looks like an account's (``аlice`` beside
  ``alice``: ``platform_app.people.usernames``) is refused and audited, never made or linked.
- Groups named in ``OIDC_GROUP_MAP`` follow the claim at each login: added when a mapped value
  is listed, removed when none is. Groups not named in the map are the app's to manage and are
  never touched. A missing claim counts as an empty one (mapped groups are removed), so a
  provider that stops sending it takes access away rather than leaving it as it was.
- With ``OIDC_STAFF_GROUPS`` set, ``is_staff`` follows the claim the same way; unset, it is left
  to the app. ``is_superuser`` is never changed by a login.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from platform_app.models import SSOIdentity
from platform_app.people.usernames import username_look_alike, username_normal
from platform_app.sso.client import SSOError
from tools_app.services.audit import audit_people_change

logger = logging.getLogger(__name__)

_NOT_USERNAME = re.compile(r"[^\w.@+-]")


class SSOLoginRefused(SSOError):
    """The provider vouched for this person, but the app will not sign them in."""


def claim_values(claims: Mapping[str, Any], name: str) -> list[str] | None:
    """The values of claim ``name`` as strings; None when the claim is absent. A name that
    is not a top-level claim may be a dotted path into nested ones (``realm_access.roles``)."""
    value: Any = claims.get(name)
    if value is None and "." in name:
        value = claims
        for part in name.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(item) for item in value if isinstance(item, str | int)]
    return []


class SSOLookAlike(SSOLoginRefused):
    """A first login whose name looks like another account's (``people.usernames``)."""

    def __init__(self, username: str, existing: str) -> None:
        super().__init__(
            _(
                "The name %(username)s looks like the existing account %(existing)s, so no "
                "account was made for it; ask an admin (the refusal is in the audit log)."
            )
            % {"username": username, "existing": existing}
        )
        self.username = username
        self.existing = existing


def sso_username(claims: Mapping[str, Any]) -> str:
    for name in (settings.OIDC_USERNAME_CLAIM, "email", "sub"):
        raw = claims.get(name)
        if isinstance(raw, str) and raw.strip():
            return _NOT_USERNAME.sub("_", username_normal(raw).strip())[:150]
    raise SSOLoginRefused(_("The ID token names nobody: it has no username, email or sub claim."))


def sso_user_login(*, claims: Mapping[str, Any], issuer: str) -> User:
    """The account ``claims`` sign in to, created, linked and synchronised as the module says.
    Raises ``SSOLoginRefused`` (and changes nothing) when the login must not happen; a name
    that looks like another account's is also written to the audit log for the admins."""
    try:
        return _login(claims=claims, issuer=issuer)
    except SSOLookAlike as exc:
        audit_people_change(
            user=None,
            subject=f"user {exc.username}",
            action="sso_look_alike",
            after={
                "username": exc.username,
                "looks_like": exc.existing,
                "issuer": issuer,
                "subject": str(claims.get("sub", "")),
            },
        )
        logger.warning("SSO: refused %r, which looks like %r", exc.username, exc.existing)
        raise


@transaction.atomic
def _login(*, claims: Mapping[str, Any], issuer: str) -> User:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SSOLoginRefused(_("The ID token has no subject (sub claim)."))
    identity = (
        SSOIdentity.objects.select_for_update()
        .select_related("user")
        .filter(issuer=issuer, subject=subject)
        .first()
    )
    if identity is None:
        identity = SSOIdentity(issuer=issuer, subject=subject, user=_account_for(claims))
    user: User = identity.user
    if not user.is_active:
        raise SSOLoginRefused(
            _("The account %(get_username)s is deactivated; ask an admin.")
            % {"get_username": user.get_username()}
        )
    identity.last_login_at = timezone.now()
    identity.save()
    _profile_update(user, claims)
    sso_groups_sync(user=user, values=claim_values(claims, settings.OIDC_GROUPS_CLAIM))
    return user


def _account_for(claims: Mapping[str, Any]) -> User:
    """The account a first login of this identity gets: a new one, or an existing one of the
    same username when linking is allowed."""
    UserModel = get_user_model()
    username = sso_username(claims)
    existing = UserModel.objects.filter(username__iexact=username).first()
    if existing is None:
        # Never beside an account it could pass for (and never linked to one either).
        look_alike = username_look_alike(username)
        if look_alike is not None:
            raise SSOLookAlike(username, look_alike)
        user = UserModel(username=username)
        user.set_unusable_password()
        user.save()
        return user
    if not settings.OIDC_LINK_EXISTING_USERS or existing.sso_identities.exists():
        raise SSOLoginRefused(
            _(
                "An account named %(get_username)s already exists and is not linked to this "
                "sign-in; ask an admin to link it (OIDC_LINK_EXISTING_USERS) or rename it."
            )
            % {"get_username": existing.get_username()}
        )
    logger.info("SSO: linking the existing account %s", existing.get_username())
    return existing


def _profile_update(user: User, claims: Mapping[str, Any]) -> None:
    # Only shown and written to, never used to find an account: an address the provider has
    # not verified (authentik marks every one so) is still the one the person gave it.
    fields = {"email": ("email", 254), "first_name": ("given_name", 150)}
    fields["last_name"] = ("family_name", 150)
    changed = []
    for field, (claim, max_length) in fields.items():
        value = claims.get(claim)
        if isinstance(value, str) and value and getattr(user, field) != value[:max_length]:
            setattr(user, field, value[:max_length])
            changed.append(field)
    if changed:
        user.save(update_fields=changed)


def sso_groups_sync(*, user: User, values: list[str] | None) -> None:
    """Mapped groups and the admin flag, in line with the claim's ``values`` (None: the
    claim was missing, which counts as listing nothing)."""
    group_map: dict[str, list[str]] = settings.OIDC_GROUP_MAP
    staff_values: list[str] = settings.OIDC_STAFF_GROUPS
    if values is None and (group_map or staff_values):
        logger.warning(
            "SSO: the ID token of %s has no %r claim; removing the mapped groups",
            user.get_username(),
            settings.OIDC_GROUPS_CLAIM,
        )
    listed = set(values or ())
    if group_map:
        managed = {name for names in group_map.values() for name in names}
        wanted = {name for value in listed for name in group_map.get(value, ())}
        Group.objects.bulk_create([Group(name=name) for name in managed], ignore_conflicts=True)
        user.groups.add(*Group.objects.filter(name__in=wanted))
        user.groups.remove(*user.groups.filter(name__in=managed - wanted))
    if staff_values:
        is_staff = bool(listed.intersection(staff_values))
        if user.is_staff != is_staff:
            user.is_staff = is_staff
            user.save(update_fields=["is_staff"])
