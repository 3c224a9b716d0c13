from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

from platform_app.models import UserPreferences


def preferences_theme(*, user: AbstractBaseUser | AnonymousUser) -> str:
    """The theme a person chose; "system" for anyone who has not chosen (or is signed out)."""
    if not user.is_authenticated:
        return UserPreferences.Theme.SYSTEM
    theme = UserPreferences.objects.filter(user_id=user.pk).values_list("theme", flat=True).first()
    return theme or UserPreferences.Theme.SYSTEM


def preferences_set_theme(*, user: AbstractBaseUser, theme: str) -> UserPreferences:
    """Record the theme; raises ValueError for a value that is not one of the choices."""
    if theme not in UserPreferences.Theme.values:
        choices = ", ".join(UserPreferences.Theme.values)
        raise ValueError(f"unknown theme {theme!r}: one of {choices}")
    preferences, _ = UserPreferences.objects.update_or_create(
        user_id=user.pk, defaults={"theme": theme}
    )
    return preferences
