"""OIDC_LOCAL_LOGIN=false: the login page shows only the SSO button, and no path takes a
password: the login form's POST, the admin's login form, nor ``authenticate()`` itself."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import authenticate
from django.test import Client

pytestmark = pytest.mark.django_db

SSO_ONLY = ["platform_app.sso.backend.OIDCBackend"]  # what settings.py makes of the switch


@pytest.fixture
def local_login_off(sso_settings: Any) -> Any:
    sso_settings.OIDC_LOCAL_LOGIN = False
    sso_settings.AUTHENTICATION_BACKENDS = SSO_ONLY
    return sso_settings


def test_the_login_page_shows_only_the_sso_button(client: Client, local_login_off: Any) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in page
    assert 'name="password"' not in page and "or with a password" not in page


def test_a_posted_password_is_refused(
    client: Client, local_login_off: Any, staff_user: Any
) -> None:
    response = client.post(
        "/accounts/login/", {"username": "root", "password": "root-password-1", "next": "/"}
    )
    assert response.status_code == 403
    assert b"Password login is turned off here; sign in with Test IdP" in response.content
    assert client.get("/tokens/").status_code == 302  # not signed in


def test_the_admin_login_refuses_a_password_and_sends_people_to_the_login_page(
    client: Client, local_login_off: Any, staff_user: Any
) -> None:
    response = client.post(
        "/admin/login/", {"username": "root", "password": "root-password-1", "next": "/admin/"}
    )
    assert response.status_code == 403
    assert client.get("/admin/").status_code == 302  # not signed in
    response = client.get("/admin/login/", {"next": "/admin/"})
    assert response.status_code == 302 and response.url == "/accounts/login/?next=/admin/"


def test_no_password_authenticates_at_all(local_login_off: Any, staff_user: Any) -> None:
    assert authenticate(username="root", password="root-password-1") is None


def test_with_local_login_on_both_ways_are_offered_and_passwords_work(
    client: Client, sso_settings: Any, staff_user: Any
) -> None:
    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with Test IdP" in page and "or with a password" in page
    response = client.post("/accounts/login/", {"username": "root", "password": "root-password-1"})
    assert response.status_code == 302 and response.url == "/"
    client.logout()
    response = client.post(
        "/admin/login/", {"username": "root", "password": "root-password-1", "next": "/admin/"}
    )
    assert response.status_code == 302 and response.url == "/admin/"
