"""A person's own display preferences (the colour theme and the language), kept on the server
so they follow the person to another browser."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.utils.translation import gettext as _

from infra.prepared import Prepared
from platform_app.models import UserPreferences

# Every page and websocket reads it (compiled once per process: infra.prepared).
_PREFERENCES = Prepared(
    lambda user_id: (
        UserPreferences.objects.filter(user_id=user_id)
        .values_list("theme", "language")
        .order_by("pk")[:1]
    ),
    user_id=int,
)


def preferences_get(*, user: AbstractBaseUser | AnonymousUser) -> tuple[str, str]:
    """(theme, language) of a person in one query: ("system", "") for anyone who has not
    chosen (or is signed out). "" as the language: follow the browser."""
    if not user.is_authenticated:
        return UserPreferences.Theme.SYSTEM, ""
    row = _PREFERENCES.one(user_id=user.pk)
    if row is None:
        return UserPreferences.Theme.SYSTEM, ""
    return row[0] or UserPreferences.Theme.SYSTEM, row[1]


def preferences_theme(*, user: AbstractBaseUser | AnonymousUser) -> str:
    """The theme a person chose; "system" for anyone who has not chosen (or is signed out)."""
    return preferences_get(user=user)[0]


def preferences_set_theme(*, user: AbstractBaseUser, theme: str) -> UserPreferences:
    """Record the theme; raises ValueError for a value that is not one of the choices."""
    if theme not in UserPreferences.Theme.values:
        choices = ", ".join(UserPreferences.Theme.values)
        raise ValueError(
            _("unknown theme %(theme)r: one of %(choices)s") % {"theme": theme, "choices": choices}
        )
    preferences, _created = UserPreferences.objects.update_or_create(
        user_id=user.pk, defaults={"theme": theme}
    )
    return preferences


def language_codes() -> list[str]:
    return [code for code, _name in settings.LANGUAGES]


def preferences_set_language(*, user: AbstractBaseUser, language: str) -> UserPreferences:
    """Record the person's language ("" to follow the browser again); raises ValueError for a
    language the site does not offer."""
    if language and language not in language_codes():
        raise ValueError(
            _("unknown language %(language)r: one of %(choices)s")
            % {"language": language, "choices": ", ".join(language_codes())}
        )
    preferences, _created = UserPreferences.objects.update_or_create(
        user_id=user.pk, defaults={"language": language}
    )
    return preferences
