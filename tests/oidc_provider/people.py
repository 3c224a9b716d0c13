from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import BaseBackend
from django.contrib.auth.models import User
from oauth2_provider.oauth2_validators import OAuth2Validator


def people() -> dict[str, Any]:
    return json.loads((settings.DIR / "people.json").read_text())


class PeopleFileBackend(BaseBackend):
    """Passwords from people.json; the provider's own user row is made on first login."""

    def authenticate(self, request: Any, username: str = "", password: str = "") -> Any:
        person = people().get(username)
        if person is None or person["password"] != password:
            return None
        return User.objects.get_or_create(username=username)[0]

    def get_user(self, user_id: int) -> Any:
        return User.objects.filter(pk=user_id).first()


class ClaimsValidator(OAuth2Validator):
    # Every claim whatever the scope: the tests decide what the token carries.
    oidc_claim_scope = None

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        person = people().get(request.user.username, {})
        return {"preferred_username": request.user.username, **person.get("claims", {})}
