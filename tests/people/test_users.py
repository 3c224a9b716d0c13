"""Admins create users with a password, invite them with a one-time link, edit their role
and groups, deactivate and reactivate them, and every change is audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core import mail
from django.test import Client

from platform_app.people import services
from tools_app.models import AuditRecord

User = get_user_model()


def people_records(action: str | None = None):
    records = AuditRecord.objects.filter(kind="people")
    return records.filter(status=action) if action else records


def test_it_creates_a_user_with_a_password_who_can_log_in(admin_client, admin_user):
    support = Group.objects.create(name="support")
    response = admin_client.post(
        "/people/users/new/",
        {
            "username": "bea",
            "first_name": "Bea",
            "email": "bea@example.com",
            "how": "password",
            "password1": "a-long-password-1",
            "password2": "a-long-password-1",
            "groups": [support.pk],
        },
    )
    bea = User.objects.get(username="bea")
    assert response.status_code == 302 and response.url == f"/people/users/{bea.pk}/"
    assert list(bea.groups.values_list("name", flat=True)) == ["support"]
    assert not bea.is_staff
    assert Client().login(username="bea", password="a-long-password-1")
    record = people_records("created").get()
    assert (record.username, record.tool) == ("ada", "user bea")
    assert record.detail["after"]["groups"] == ["support"]


def test_it_refuses_a_taken_username_a_short_password_and_two_different_ones(admin_client):
    User.objects.create_user("bea")
    html = admin_client.post(
        "/people/users/new/",
        {"username": "BEA", "how": "password", "password1": "short", "password2": "short"},
    ).content.decode()
    assert "That username is taken." in html and "too short" in html
    html = admin_client.post(
        "/people/users/new/",
        {"username": "cy", "how": "password", "password1": "a" * 12, "password2": "b" * 12},
    ).content.decode()
    assert "The two passwords differ." in html
    assert not User.objects.filter(username="cy").exists()
    assert not people_records().exists()


def test_an_invitation_shows_a_one_time_link_to_the_admin(admin_client):
    response = admin_client.post(
        "/people/users/new/", {"username": "dee", "email": "dee@example.com", "how": "invite"}
    )
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    html = response.content.decode()
    dee = User.objects.get(username="dee")
    assert not dee.has_usable_password()
    assert "Invitation link for dee" in html and "/accounts/set-password/" in html
    assert "email is not configured" in html
    assert not mail.outbox
    assert people_records("invited").get().tool == "user dee"


def test_an_invitation_is_emailed_when_email_is_configured(admin_client, settings):
    settings.EMAIL_ENABLED = True
    html = admin_client.post(
        "/people/users/new/", {"username": "dee", "email": "dee@example.com", "how": "invite"}
    ).content.decode()
    assert "Sent to <strong>dee@example.com</strong>" in html
    [message] = mail.outbox
    assert message.to == ["dee@example.com"]
    assert message.subject == "You are invited to Control Center"
    assert "http://testserver/accounts/set-password/" in message.body


def test_it_saves_names_staff_and_groups(admin_client, member):
    support, ops = Group.objects.create(name="support"), Group.objects.create(name="ops")
    member.groups.add(support)
    response = admin_client.post(
        f"/people/users/{member.pk}/",
        {"first_name": "Mia", "email": "m@example.com", "is_staff": "on", "groups": [ops.pk]},
    )
    assert response.status_code == 302
    member.refresh_from_db()
    assert member.is_staff and member.first_name == "Mia" and member.email == "m@example.com"
    assert list(member.groups.values_list("name", flat=True)) == ["ops"]
    record = people_records("staff_changed").get()
    assert record.detail["changed"] == ["email", "first_name", "groups", "is_staff"]
    assert record.detail["before"]["groups"] == ["support"]


def test_a_group_membership_change_alone_is_audited_as_such(admin_client, member):
    ops = Group.objects.create(name="ops")
    admin_client.post(f"/people/users/{member.pk}/", {"email": member.email, "groups": [ops.pk]})
    record = people_records("groups_changed").get()
    assert (record.detail["before"]["groups"], record.detail["after"]["groups"]) == ([], ["ops"])


def test_deactivating_blocks_login_and_ends_sessions(admin_client, member, member_client):
    assert member_client.get("/accounts/password/").status_code == 200
    response = admin_client.post(f"/people/users/{member.pk}/active/", {"active": "0"})
    assert response.status_code == 302
    member.refresh_from_db()
    assert not member.is_active
    assert not Client().login(username="mia", password="mia-password-1")
    assert member_client.get("/accounts/password/").status_code == 302  # signed out
    assert people_records("deactivated").get().tool == "user mia"
    admin_client.post(f"/people/users/{member.pk}/active/", {"active": "1"})
    assert Client().login(username="mia", password="mia-password-1")
    assert people_records("reactivated").exists()


def test_an_admin_cannot_deactivate_or_unstaff_themselves(admin_client, admin_user):
    response = admin_client.post(f"/people/users/{admin_user.pk}/active/", {"active": "0"})
    assert response.status_code == 302
    html = admin_client.get(response.url).content.decode()
    assert "You cannot deactivate your own account." in html
    html = admin_client.post(f"/people/users/{admin_user.pk}/", {"email": ""}).content.decode()
    assert "You cannot remove your own admin (staff) role." in html
    admin_user.refresh_from_db()
    assert admin_user.is_active and admin_user.is_staff
    assert not people_records().exists()


def test_the_last_active_admin_stays(admin_user, member):
    other = User.objects.create_user("zed", is_staff=True)
    services.user_set_active(actor=admin_user, user=other, active=False)
    # ada is the only active admin now: another admin could not remove her, and she cannot.
    with pytest.raises(services.PeopleError, match="last active admin"):
        services.check_keeps_an_admin(actor=other, user=admin_user, active=False, staff=True)
    with pytest.raises(services.PeopleError, match="last active admin"):
        services.check_keeps_an_admin(actor=other, user=admin_user, active=True, staff=False)
    services.user_set_active(actor=admin_user, user=other, active=True)
    services.user_update(
        actor=other,
        user=admin_user,
        first_name="",
        last_name="",
        email="",
        is_staff=False,
        groups=[],
    )
    admin_user.refresh_from_db()
    assert not admin_user.is_staff


def test_only_a_superuser_changes_a_superuser(admin_client, superuser, superuser_client):
    html = admin_client.get(f"/people/users/{superuser.pk}/").content.decode()
    assert "only a superuser changes this account" in html
    response = admin_client.post(f"/people/users/{superuser.pk}/active/", {"active": "0"})
    html = admin_client.get(response.url).content.decode()
    assert "Only a superuser may change the superuser sam." in html
    admin_client.post(f"/people/users/{superuser.pk}/password-link/")
    superuser.refresh_from_db()
    assert superuser.is_active and superuser.has_usable_password()


def test_the_list_shows_groups_roles_status_and_last_login(admin_client, member, superuser):
    support = Group.objects.create(name="support")
    member.groups.add(support)
    User.objects.create_user("gone", is_active=False)
    User.objects.create_user("newbie")  # invited: no usable password, never logged in
    html = admin_client.get("/people/").content.decode()
    # Names as the list's links show them (a bare "mia" could be part of the CSRF token).
    assert ">mia<" in html and "support" in html and "Everyone" in html
    assert "role-superuser" in html and "role-admin" in html and "role-auditor" in html
    assert ">invited<" in html and ">never<" in html
    assert ">gone<" not in html
    html = admin_client.get("/people/?show=inactive").content.decode()
    assert ">gone<" in html and ">mia<" not in html
    html = admin_client.get("/people/?q=MI&show=all").content.decode()
    assert ">mia<" in html and ">newbie<" not in html


def test_a_user_page_shows_the_account(admin_client, member):
    html = admin_client.get(f"/people/users/{member.pk}/").content.decode()
    assert "Last login" in html and "never" in html
    assert "Reset password…" in html and "Deactivate" in html
    assert admin_client.get("/people/users/999999/").status_code == 404
