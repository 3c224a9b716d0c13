"""The authentication backend for SSO logins. It accepts only verified ID token claims (from
``views.oidc_callback``), never a password; being a ``ModelBackend`` it also answers the
permission checks, so it can be the only backend when local login is off."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.http import HttpRequest

from platform_app.sso.services import sso_user_login


class OIDCBackend(ModelBackend):
    # Django offers a backend only the credentials its signature accepts, so this one takes
    # the claims by name (and a username/password call gets None).
    def authenticate(  # type: ignore[override]
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        *,
        oidc_claims: Mapping[str, Any] | None = None,
        oidc_issuer: str = "",
        **kwargs: Any,
    ) -> User | None:
        if oidc_claims is None or not oidc_issuer:
            return None
        return sso_user_login(claims=oidc_claims, issuer=oidc_issuer)
