"""One-time set-password links (invitations and resets): public, work once, expire, and a
deactivated account's link sets nothing."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from platform_app.people import services
from tests.people.conftest import link_path
from tools_app.models import AuditRecord

User = get_user_model()


def use_link(path: str, password: str) -> tuple[Client, object]:
    """Follow the link as the invitee does: GET (Django moves the token into the session),
    then POST the form."""
    client = Client()
    page = client.get(path)
    assert page.status_code == 302  # to the same page with the token out of the URL
    form_url = page.url
    response = client.post(form_url, {"new_password1": password, "new_password2": password})
    return client, response


def test_an_invitation_link_sets_the_password_once(admin_user):
    _, link = services.user_create(actor=admin_user, username="dee", base_url="http://x/")
    assert link is not None and link.url.startswith("http://x/accounts/set-password/")
    client = Client()
    page = client.get(link_path(link.url), follow=True)
    assert "Choose your password" in page.content.decode() and "dee" in page.content.decode()
    _, response = use_link(link_path(link.url), "dee-password-1")
    assert response.status_code == 302 and response.url == "/accounts/set-password/done/"
    assert Client().login(username="dee", password="dee-password-1")
    assert AuditRecord.objects.filter(kind="people", status="password_set", username="dee")
    # Once: the password it was made from is gone.
    again = Client().get(link_path(link.url), follow=True).content.decode()
    assert "This link does not work any more" in again


def test_the_set_password_page_is_public_and_a_bad_token_is_refused(member):
    html = Client().get("/accounts/set-password/MQ/not-a-token/").content.decode()
    assert "This link does not work any more" in html
    assert Client().get("/accounts/set-password/done/").status_code == 200


def test_it_refuses_a_weak_password_on_the_link_page(admin_user):
    _, link = services.user_create(actor=admin_user, username="dee", base_url="http://x/")
    _, response = use_link(link_path(link.url), "short")
    assert response.status_code == 200 and "too short" in response.content.decode()
    assert not User.objects.get(username="dee").has_usable_password()


def test_a_reset_link_stops_the_old_password_and_sets_a_new_one(admin_client, member):
    response = admin_client.post(f"/people/users/{member.pk}/password-link/")
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    html = response.content.decode()
    assert "One-time password link for mia" in html
    url = html.split('id="password-link" class="mono" value="', 1)[1].split('"', 1)[0]
    assert not Client().login(username="mia", password="mia-password-1")
    use_link(link_path(url), "mia-new-password-1")
    assert Client().login(username="mia", password="mia-new-password-1")
    record = AuditRecord.objects.get(kind="people", status="password_link")
    assert (record.username, record.tool) == ("ada", "user mia")


def test_a_new_link_replaces_the_previous_one(admin_user, member):
    first = services.user_password_reset(actor=admin_user, user=member, base_url="http://x/")
    member.refresh_from_db()
    second = services.user_password_reset(actor=admin_user, user=member, base_url="http://x/")
    use_link(link_path(second.url), "mia-new-password-1")
    html = Client().get(link_path(first.url), follow=True).content.decode()
    assert "This link does not work any more" in html


def test_a_deactivated_accounts_link_sets_nothing(admin_user):
    dee, link = services.user_create(actor=admin_user, username="dee", base_url="http://x/")
    services.user_set_active(actor=admin_user, user=dee, active=False)
    html = Client().get(link_path(link.url), follow=True).content.decode()
    assert "This link does not work any more" in html


def test_an_admin_resets_their_own_password_on_the_password_page(admin_client, admin_user):
    response = admin_client.post(f"/people/users/{admin_user.pk}/password-link/")
    assert response.status_code == 302
    assert (
        "Change your own password on the Password page."
        in admin_client.get(response.url).content.decode()
    )
    admin_user.refresh_from_db()
    assert admin_user.has_usable_password()


def test_a_reset_link_is_emailed_when_email_is_configured(admin_user, member, settings):
    from django.core import mail

    settings.EMAIL_ENABLED = True
    link = services.user_password_reset(actor=admin_user, user=member, base_url="http://x/")
    assert link.emailed
    [message] = mail.outbox
    assert message.to == ["mia@example.com"] and link.url in message.body
    assert message.subject == "Set a new Control Center password"
