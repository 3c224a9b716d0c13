"""The OIDC_* settings as the environment gives them (controlcenter/settings.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from infra.env import envmap
from tests.unit.test_settings import clean_env, load  # noqa: F401  (clean_env: fixture)

BASE = {"SECRET_KEY": "k" * 50}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, clean_env: Path) -> Any:  # noqa: F811
    for name in (
        "OIDC_CLIENT_ID",
        "OIDC_CLIENT_SECRET",
        "OIDC_ISSUER",
        "OIDC_DISCOVERY_URL",
        "OIDC_SCOPES",
        "OIDC_GROUP_MAP",
        "OIDC_STAFF_GROUPS",
        "OIDC_LOCAL_LOGIN",
    ):
        monkeypatch.delenv(name, raising=False)
    return lambda **values: load(monkeypatch, CC_VAR_DIR=str(clean_env / "var"), **BASE, **values)


def test_sso_is_off_without_a_client_id(env: Any) -> None:
    names = env()
    assert names["OIDC_ENABLED"] is False and names["OIDC_LOCAL_LOGIN"] is True
    assert names["AUTHENTICATION_BACKENDS"] == [
        "django.contrib.auth.backends.ModelBackend",
        "platform_app.sso.backend.OIDCBackend",
    ]


def test_it_reads_the_provider_and_the_mapping(env: Any, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cret\n")
    names = env(
        OIDC_CLIENT_ID="cc",
        OIDC_CLIENT_SECRET_FILE=str(secret),
        OIDC_ISSUER="https://idp.example/realms/acme/",
        OIDC_GROUP_MAP="cc-admins=admins, cc-admins=support,cc-support=support",
        OIDC_STAFF_GROUPS="cc-admins",
        OIDC_LOCAL_LOGIN="false",
    )
    assert names["OIDC_ENABLED"] is True and names["OIDC_CLIENT_SECRET"] == "s3cret"
    assert names["OIDC_DISCOVERY_URL"] == (
        "https://idp.example/realms/acme/.well-known/openid-configuration"
    )
    assert names["OIDC_SCOPES"] == ["openid", "email", "profile"]
    assert names["OIDC_GROUP_MAP"] == {
        "cc-admins": ["admins", "support"],
        "cc-support": ["support"],
    }
    assert names["OIDC_STAFF_GROUPS"] == ["cc-admins"]
    assert names["AUTHENTICATION_BACKENDS"] == ["platform_app.sso.backend.OIDCBackend"]


@pytest.mark.parametrize(
    ("values", "words"),
    [
        ({"OIDC_CLIENT_ID": "cc"}, "set OIDC_ISSUER or OIDC_DISCOVERY_URL"),
        ({"OIDC_LOCAL_LOGIN": "false"}, "nobody could log in"),
        (
            {"OIDC_CLIENT_ID": "cc", "OIDC_ISSUER": "https://i.example", "OIDC_SCOPES": "email"},
            "must include openid",
        ),
        ({"OIDC_GROUP_MAP": "cc-admins"}, "not of the form key=value"),
    ],
)
def test_it_refuses_settings_that_cannot_work(env: Any, values: dict[str, str], words: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=words):
        env(**values)


def test_a_mapping_file_may_hold_keys_with_commas(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    mapping = tmp_path / "map"
    mapping.write_text("cn=admins,ou=groups,dc=acme=admins\n")
    monkeypatch.setenv("X_MAP_FILE", str(mapping))
    assert envmap("X_MAP") == {"cn=admins,ou=groups,dc=acme": ["admins"]}
