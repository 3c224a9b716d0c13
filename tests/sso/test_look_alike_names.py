"""Usernames that pass for someone else's (issue 33, finding 8): a name from SSO is NFKC
normalised, and one that looks like an existing account's (Unicode's confusable skeleton,
any case) is refused with words that say so and an audit record, never made beside it. The
People page refuses the same names. Through the real provider process."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.sso.provider import OIDCProvider
from tests.sso.test_group_sync import sso_login
from tools_app.models import AuditRecord

pytestmark = [pytest.mark.django_db, pytest.mark.modes]

User = get_user_model()

LOOK_ALIKES = [
    "\u0430lice",  # Cyrillic а
    "\u0410lice",  # Cyrillic А
    "AIice",  # capital I for l
    "\u0251lice",  # Latin alpha
    "alic\u0435",  # Cyrillic е
]


def test_it_refuses_an_sso_name_that_looks_like_an_existing_account(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    User.objects.create_user("alice")
    for i, name in enumerate(LOOK_ALIKES):
        password = oidc_provider.person(f"mallory{i}", preferred_username=name)
        response = sso_login(client, oidc_provider, f"mallory{i}", password)
        assert response.status_code == 403, (name, response.status_code)
        page = response.content.decode()
        assert "looks like the existing account alice" in page, name
    assert list(User.objects.values_list("username", flat=True)) == ["alice"]
    records = AuditRecord.objects.filter(kind="people", status="sso_look_alike")
    assert records.count() == len(LOOK_ALIKES)
    assert {r.detail["after"]["looks_like"] for r in records} == {"alice"}
    assert {r.detail["after"]["username"] for r in records} == set(LOOK_ALIKES)


def test_it_normalises_an_sso_name_with_nfkc(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person("bob", preferred_username="\uff42\uff4f\uff42")  # ｂｏｂ
    assert sso_login(client, oidc_provider, "bob", password).status_code == 302
    assert list(User.objects.values_list("username", flat=True)) == ["bob"]
    # A fullwidth look-alike of an account is that account's name: not linked, refused.
    client.logout()
    User.objects.create_user("carol")
    password = oidc_provider.person("mallory", preferred_username="\uff43arol")
    response = sso_login(client, oidc_provider, "mallory", password)
    assert response.status_code == 403
    assert "An account named carol already exists" in response.content.decode()
    assert not User.objects.exclude(username__in=["bob", "carol"]).exists()


def test_it_refuses_a_look_alike_on_the_people_page(admin_client: Client) -> None:
    User.objects.create_user("alice")
    for name in ("\u0430lice", "AIice", "\u0251lic\u0435"):
        html = admin_client.post("/people/users/new/", {"username": name, "how": "invite"})
        assert "looks like the existing account alice" in html.content.decode(), name
    html = admin_client.post("/people/users/new/", {"username": "\uff41lice", "how": "invite"})
    assert "That username is taken." in html.content.decode()  # ａlice is alice (NFKC)
    assert not User.objects.exclude(username__in=["alice", "admin"]).exists()


def test_it_leaves_names_that_only_share_letters_alone(db: None) -> None:
    from platform_app.people.usernames import username_look_alike

    User.objects.create_user("alice")
    for name in ("alicia", "al1ce", "alice2", "bob"):
        assert username_look_alike(name) is None, name
