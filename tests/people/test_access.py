"""The People pages are for admins (staff): members get 403, visitors the login page; the
Password page is for everyone signed in."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.test import Client

from tools_app.models import AuditRecord

PAGES = ["/people/", "/people/users/new/", "/people/groups/"]


@pytest.mark.parametrize("url", PAGES)
def test_it_sends_visitors_to_the_login_page(url, db):
    response = Client().get(url)
    assert response.status_code == 302 and response.url.startswith("/accounts/login/")


@pytest.mark.parametrize("url", PAGES)
def test_it_refuses_members_with_403(url, member_client):
    response = member_client.get(url)
    assert response.status_code == 403
    assert "for admins" in response.content.decode()


def test_members_cannot_change_anything(member_client, member, admin_user):
    group = Group.objects.create(name="support")
    posts = [
        ("/people/users/new/", {"username": "eve", "how": "password", "password1": "x" * 12}),
        (f"/people/users/{admin_user.pk}/active/", {"active": "0"}),
        (f"/people/users/{admin_user.pk}/password-link/", {}),
        (f"/people/users/{member.pk}/", {"is_staff": "on"}),
        ("/people/groups/", {"name": "mine"}),
        (f"/people/groups/{group.pk}/", {"name": "renamed"}),
        (f"/people/groups/{group.pk}/members/", {"users": [member.pk]}),
        (f"/people/groups/{group.pk}/delete/", {}),
        (f"/people/groups/{group.pk}/auditor/", {"auditor": "1"}),
    ]
    for url, data in posts:
        assert member_client.post(url, data).status_code == 403, url
    member.refresh_from_db()
    admin_user.refresh_from_db()
    assert not member.is_staff and admin_user.is_active
    assert list(Group.objects.exclude(name="Everyone").values_list("name", flat=True)) == [
        "support"
    ]
    assert not group.user_set.exists()
    assert not AuditRecord.objects.filter(kind="people").exists()


def test_admins_see_every_page_and_the_top_bar_links_people(admin_client):
    for url in PAGES:
        assert admin_client.get(url).status_code == 200, url
    html = admin_client.get("/people/").content.decode()
    assert '<a href="/people/" aria-current="page">People</a>' in html


def test_members_see_no_people_link_but_a_password_link(member_client):
    html = member_client.get("/accounts/password/").content.decode()
    assert 'href="/people/"' not in html
    assert 'href="/accounts/password/"' in html
