"""SSO logins through the real provider process (tests/oidc_provider), with the app driven by
Django's test client: accounts made on first login, groups and the admin flag following the
groups claim at each login, refusals. The token request and the ID token's checks are real."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from platform_app.models import SSOIdentity
from tests.sso.provider import OIDCProvider, ProviderBrowser, callback_path

# Both modes: the distributed pass runs these on PostgreSQL (row locks, ON CONFLICT inserts).
pytestmark = [pytest.mark.django_db, pytest.mark.modes]

User = get_user_model()


def sso_login(
    client: Client, provider: OIDCProvider, username: str, password: str, next_url: str = "/"
) -> Any:
    """Press "Sign in with ...", sign in at the provider, come back: the callback's answer."""
    start = client.get("/accounts/oidc/login/", {"next": next_url})
    assert start.status_code == 302, start.content
    back = ProviderBrowser(provider).authorize(start["Location"], username, password)
    return client.get(callback_path(back))


def group_names(user: Any) -> set[str]:
    return set(user.groups.values_list("name", flat=True))


def test_it_creates_the_account_with_the_mapped_groups(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person(
        "carol", email="carol@example.com", given_name="Carol", groups=["cc-support", "cc-other"]
    )
    response = sso_login(client, oidc_provider, "carol", password, next_url="/tokens/")
    assert response.status_code == 302 and response.url == "/tokens/"
    carol = User.objects.get(username="carol")
    assert group_names(carol) == {"support"}  # cc-other is not mapped: ignored
    assert Group.objects.filter(name="admins").exists()  # mapped groups are created
    assert not carol.is_staff and not carol.has_usable_password()
    assert (carol.email, carol.first_name) == ("carol@example.com", "Carol")
    identity = SSOIdentity.objects.get(user=carol)
    assert identity.issuer == oidc_provider.issuer and identity.subject
    assert client.get("/tokens/").status_code == 200  # signed in


def test_each_login_brings_mapped_groups_and_staff_in_line_with_the_claim(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person("dave", groups=["cc-admins"])
    assert sso_login(client, oidc_provider, "dave", password).status_code == 302
    dave = User.objects.get(username="dave")
    assert group_names(dave) == {"admins", "support"} and dave.is_staff
    # A group the mapping does not name is the app's to manage: logins leave it alone.
    dave.groups.add(Group.objects.create(name="reviewers"))

    oidc_provider.person("dave", password=password, groups=["cc-support"])
    client.logout()
    assert sso_login(client, oidc_provider, "dave", password).status_code == 302
    dave.refresh_from_db()
    assert group_names(dave) == {"support", "reviewers"}
    assert not dave.is_staff
    assert SSOIdentity.objects.filter(user=dave).count() == 1  # the same identity, not a new one


def test_a_missing_groups_claim_removes_the_mapped_groups(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person("erin", groups=["cc-admins"])
    sso_login(client, oidc_provider, "erin", password)
    erin = User.objects.get(username="erin")
    erin.groups.add(Group.objects.create(name="reviewers"))

    oidc_provider.person("erin", password=password)  # the provider stops sending "groups"
    client.logout()
    assert sso_login(client, oidc_provider, "erin", password).status_code == 302
    erin.refresh_from_db()
    assert group_names(erin) == {"reviewers"} and not erin.is_staff


def test_it_reads_a_nested_groups_claim(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    sso_settings.OIDC_GROUPS_CLAIM = "realm_access.roles"
    password = oidc_provider.person("fay", realm_access={"roles": ["cc-support"]})
    sso_login(client, oidc_provider, "fay", password)
    assert group_names(User.objects.get(username="fay")) == {"support"}


def test_a_deactivated_account_cannot_sign_in(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person("gus", groups=["cc-support"])
    sso_login(client, oidc_provider, "gus", password)
    User.objects.filter(username="gus").update(is_active=False)
    oidc_provider.person("gus", password=password, groups=["cc-admins"])
    client.logout()

    response = sso_login(client, oidc_provider, "gus", password)
    assert response.status_code == 403
    assert b"gus is deactivated" in response.content
    gus = User.objects.get(username="gus")
    assert group_names(gus) == {"support"} and not gus.is_staff  # nothing changed
    assert client.get("/tokens/").status_code == 302  # not signed in


def test_it_does_not_take_over_a_local_account_of_the_same_name(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    User.objects.create_superuser("hal", password="hal-local-password")
    password = oidc_provider.person("hal", groups=["cc-admins"])
    response = sso_login(client, oidc_provider, "hal", password)
    assert response.status_code == 403
    assert b"An account named hal already exists" in response.content
    assert not SSOIdentity.objects.exists()

    sso_settings.OIDC_LINK_EXISTING_USERS = True
    client.logout()
    assert sso_login(client, oidc_provider, "hal", password).status_code == 302
    assert SSOIdentity.objects.get().user.username == "hal"


def test_a_callback_from_another_session_is_refused(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    """The state ties the callback to the browser that started the login (CSRF)."""
    password = oidc_provider.person("ivy", groups=["cc-admins"])
    start = Client().get("/accounts/oidc/login/")
    back = ProviderBrowser(oidc_provider).authorize(start["Location"], "ivy", password)
    response = client.get(callback_path(back))
    assert response.status_code == 403
    assert b"started in another browser tab or has expired" in response.content
    assert not User.objects.filter(username="ivy").exists()


def test_it_sends_an_outside_next_url_home(
    client: Client, sso_settings: Any, oidc_provider: OIDCProvider
) -> None:
    password = oidc_provider.person("jo")
    response = sso_login(client, oidc_provider, "jo", password, next_url="https://evil.example/")
    assert response.status_code == 302 and response.url == "/"


def test_an_unreachable_provider_is_explained_on_the_login_page(
    client: Client, sso_settings: Any
) -> None:
    sso_settings.OIDC_DISCOVERY_URL = "http://127.0.0.1:9/.well-known/openid-configuration"
    response = client.get("/accounts/oidc/login/")
    assert response.status_code == 502
    assert b"Single sign-on is unavailable" in response.content
    assert b"127.0.0.1:9/.well-known/openid-configuration" in response.content
    assert b"(cannot connect to 127.0.0.1:9)" in response.content
    assert b"Sign in with Test IdP" in response.content  # the page still offers both ways
    assert b'name="password"' in response.content


def test_a_discovery_document_of_another_issuer_is_refused(
    client: Client, sso_settings: Any
) -> None:
    sso_settings.OIDC_ISSUER = "https://idp.example"
    response = client.get("/accounts/oidc/login/")
    assert response.status_code == 502
    assert b"not OIDC_ISSUER=" in response.content


def test_the_login_page_offers_the_provider_only_when_configured(
    client: Client, sso_settings: Any
) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in page and 'name="password"' in page

    sso_settings.OIDC_ENABLED = False
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with" not in page and 'name="password"' in page
    assert client.get("/accounts/oidc/login/").status_code == 404
