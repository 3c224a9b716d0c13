"""``manage.py check --deploy`` reads the provider's discovery document and keys, so an
operator learns of a wrong issuer before the first person presses the button."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError


def test_it_passes_when_the_provider_answers(sso_settings: Any) -> None:
    call_command("check", "--deploy", "--tag", "sso")


def test_it_names_an_unreachable_provider(sso_settings: Any) -> None:
    sso_settings.OIDC_DISCOVERY_URL = "http://127.0.0.1:9/.well-known/openid-configuration"
    with pytest.raises(SystemCheckError, match=r"platform\.E001.*discovery document"):
        call_command("check", "--deploy", "--tag", "sso")


def test_it_is_silent_without_sso(settings: Any) -> None:
    settings.OIDC_ENABLED = False
    call_command("check", "--deploy", "--tag", "sso")
