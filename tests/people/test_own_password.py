"""Every signed-in user changes their own password on the Password page."""

from __future__ import annotations

from django.test import Client


def test_a_member_changes_their_password_and_stays_signed_in(member_client):
    page = member_client.get("/accounts/password/")
    assert page.status_code == 200 and "Change password" in page.content.decode()
    response = member_client.post(
        "/accounts/password/",
        {
            "old_password": "mia-password-1",
            "new_password1": "mia-new-password-1",
            "new_password2": "mia-new-password-1",
        },
    )
    assert response.status_code == 302 and response.url == "/accounts/password/"
    assert "Your password is changed." in member_client.get(response.url).content.decode()
    assert Client().login(username="mia", password="mia-new-password-1")
    assert not Client().login(username="mia", password="mia-password-1")


def test_it_needs_the_old_password(member_client):
    html = member_client.post(
        "/accounts/password/",
        {
            "old_password": "wrong",
            "new_password1": "mia-new-password-1",
            "new_password2": "mia-new-password-1",
        },
    ).content.decode()
    assert "Your old password was entered incorrectly" in html
    assert Client().login(username="mia", password="mia-password-1")


def test_visitors_are_sent_to_log_in(db):
    response = Client().get("/accounts/password/")
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")
