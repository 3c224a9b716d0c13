"""Groups: create, rename, delete (not Everyone), members added and removed, the auditor
permission given by a superuser; every change audited."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from platform_app.people import services
from tools_app.models import AuditRecord


def records(action: str):
    return AuditRecord.objects.filter(kind="people", status=action)


def test_it_creates_renames_and_deletes_a_group(admin_client, member):
    response = admin_client.post("/people/groups/", {"name": "support"})
    group = Group.objects.get(name="support")
    assert response.status_code == 302 and response.url == f"/people/groups/{group.pk}/"
    group.user_set.add(member)
    admin_client.post(f"/people/groups/{group.pk}/", {"name": "helpdesk"})
    group.refresh_from_db()
    assert group.name == "helpdesk"
    response = admin_client.post(f"/people/groups/{group.pk}/delete/")
    assert response.status_code == 302 and response.url == "/people/groups/"
    assert not Group.objects.filter(pk=group.pk).exists()
    member.refresh_from_db()
    assert member.is_active
    assert records("created").get().tool == "group support"
    assert records("renamed").get().detail["after"] == {"name": "helpdesk"}
    assert records("deleted").get().detail["before"] == {"name": "helpdesk", "members": ["mia"]}


def test_it_refuses_duplicate_and_reserved_names(admin_client):
    Group.objects.create(name="support")
    html = admin_client.post("/people/groups/", {"name": "SUPPORT"}).content.decode()
    assert "A group named “SUPPORT” exists already." in html
    html = admin_client.post("/people/groups/", {"name": "everyone"}).content.decode()
    assert "choose another name" in html
    assert Group.objects.count() == 2  # support and Everyone


def test_everyone_cannot_be_renamed_deleted_or_given_members(admin_client, admin_user, member):
    everyone = services.everyone_group()
    admin_client.post(f"/people/groups/{everyone.pk}/", {"name": "All"})
    admin_client.post(f"/people/groups/{everyone.pk}/delete/")
    admin_client.post(f"/people/groups/{everyone.pk}/members/", {"users": [member.pk]})
    everyone.refresh_from_db()
    assert everyone.name == "Everyone" and not everyone.user_set.exists()
    html = admin_client.get(f"/people/groups/{everyone.pk}/").content.decode()
    assert "Every user is a member" in html and "Delete group" not in html
    assert not AuditRecord.objects.filter(kind="people").exists()


def test_members_are_added_and_removed(admin_client, member, admin_user):
    group = Group.objects.create(name="support")
    page = admin_client.get(f"/people/groups/{group.pk}/").content.decode()
    assert f'<option value="{member.pk}">mia</option>' in page
    admin_client.post(f"/people/groups/{group.pk}/members/", {"users": [member.pk, admin_user.pk]})
    assert set(group.user_set.values_list("username", flat=True)) == {"ada", "mia"}
    admin_client.post(f"/people/groups/{group.pk}/members/{member.pk}/remove/")
    assert list(group.user_set.values_list("username", flat=True)) == ["ada"]
    changes = records("members_changed").order_by("id")
    assert [r.detail["after"]["members"] for r in changes] == [["ada", "mia"], ["ada"]]


def test_the_list_links_each_group_to_its_grants(admin_client):
    group = Group.objects.create(name="support")
    html = admin_client.get("/people/groups/").content.decode()
    assert f'href="/people/groups/{group.pk}/grants/"' in html and ">Grants<" in html
    assert "every user, implicitly" in html


def test_a_superuser_makes_a_group_auditors_and_then_only_a_superuser_edits_it(
    superuser_client, admin_client, member
):
    group = Group.objects.create(name="auditors")
    admin_client.post(f"/people/groups/{group.pk}/auditor/", {"auditor": "1"})
    assert not group.permissions.exists()
    superuser_client.post(f"/people/groups/{group.pk}/auditor/", {"auditor": "1"})
    assert group.permissions.filter(codename="audit_conversations").exists()
    assert records("auditor_changed").get().username == "sam"
    # An admin who is not a superuser cannot make themselves (or anyone) an auditor.
    admin_client.post(f"/people/groups/{group.pk}/members/", {"users": [member.pk]})
    admin_client.post(f"/people/groups/{group.pk}/delete/")
    assert Group.objects.filter(pk=group.pk).exists() and not group.user_set.exists()
    html = admin_client.get(f"/people/groups/{group.pk}/").content.decode()
    assert "only a superuser changes its members" in html
    superuser_client.post(f"/people/groups/{group.pk}/members/", {"users": [member.pk]})
    assert list(group.user_set.all()) == [member]


def test_an_admin_cannot_join_an_auditor_group_through_the_user_form(
    admin_client, admin_user, superuser
):
    group = Group.objects.create(name="auditors")
    services.group_auditor_set(actor=superuser, group=group, auditor=True)
    html = admin_client.get(f"/people/users/{admin_user.pk}/").content.decode()
    assert f'value="{group.pk}" id="group-{group.pk}" disabled' in html
    admin_client.post(f"/people/users/{admin_user.pk}/", {"is_staff": "on", "groups": [group.pk]})
    assert not admin_user.groups.exists()
    with pytest.raises(services.PeopleError, match="only a superuser"):
        services.user_create(actor=admin_user, username="x", groups=[group], password="p" * 12)


def test_a_member_already_in_an_auditor_group_keeps_it_when_an_admin_saves_them(
    admin_client, member, superuser
):
    group = Group.objects.create(name="auditors")
    services.group_auditor_set(actor=superuser, group=group, auditor=True)
    group.user_set.add(member)
    admin_client.post(f"/people/users/{member.pk}/", {"first_name": "Mia"})
    assert list(member.groups.all()) == [group]
    html = admin_client.post(f"/people/users/{member.pk}/", {"email": "not-an-address"})
    html = html.content.decode()
    assert "Enter a valid email address." in html
    assert f'value="{group.pk}" id="group-{group.pk}" checked disabled' in html


def test_user_groups_always_include_everyone(member):
    support = Group.objects.create(name="support")
    assert [g.name for g in services.user_groups(member)] == ["Everyone"]
    member.groups.add(support)
    assert [g.name for g in services.user_groups(member)] == ["Everyone", "support"]


def test_the_migration_made_everyone(db):
    assert Group.objects.filter(name="Everyone").exists()
