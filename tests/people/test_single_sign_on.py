"""With single sign-on: an SSO account counts as active without a password, and with
password login off (OIDC_LOCAL_LOGIN=false) the People pages set no passwords and issue no
links, and the Password page says why."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from platform_app.models import SSOIdentity
from platform_app.people import services
from tests.people.conftest import link_path

User = get_user_model()


@pytest.fixture
def password_login_off(settings):
    settings.OIDC_LOCAL_LOGIN = False


def test_an_sso_account_is_active_without_a_password(admin_client):
    olga = User.objects.create_user("olga")  # as a first SSO login makes it
    SSOIdentity.objects.create(user=olga, issuer="https://id.example", subject="123")
    html = admin_client.get("/people/").content.decode()
    row = html.split(f'href="/people/users/{olga.pk}/"', 1)[1].split("</tr>", 1)[0]
    assert ">active<" in row and ">SSO<" in row and "invited" not in row
    page = admin_client.get(f"/people/users/{olga.pk}/").content.decode()
    assert "none: signs in with single sign-on" in page


def test_with_password_login_off_nobody_is_given_a_password(
    admin_client, admin_user, member, password_login_off
):
    response = admin_client.get("/people/users/new/")
    assert response.status_code == 302 and response.url == "/people/"
    html = admin_client.get("/people/").content.decode()
    assert "Password login is off" in html and "Add user" not in html
    admin_client.post("/people/users/new/", {"username": "x", "how": "invite"})
    assert not User.objects.filter(username="x").exists()
    page = admin_client.get(f"/people/users/{member.pk}/").content.decode()
    assert "Reset password" not in page and "Deactivate" in page
    admin_client.post(f"/people/users/{member.pk}/password-link/")
    member.refresh_from_db()
    assert member.has_usable_password()
    with pytest.raises(services.PeopleError, match="Password login is off"):
        services.user_password_reset(actor=admin_user, user=member, base_url="http://x/")


def test_with_password_login_off_links_and_the_password_page_do_nothing(
    admin_user, member, settings
):
    link = services.user_password_reset(actor=admin_user, user=member, base_url="http://x/")
    settings.OIDC_LOCAL_LOGIN = False
    html = Client().get(link_path(link.url), follow=True).content.decode()
    assert "Password login is off: sign in with single sign-on instead." in html
    client = Client()
    client.force_login(member)
    page = client.get("/accounts/password/").content.decode()
    assert "Password login is off" in page and "Change password" not in page
    assert 'href="/accounts/password/"' not in page  # not in the user menu either
    client.post(
        "/accounts/password/",
        {"old_password": "x", "new_password1": "n" * 12, "new_password2": "n" * 12},
    )
    member.refresh_from_db()
    assert not member.check_password("n" * 12)
