"""Grants (issue 22): the editor (People › Groups › Grants), the agent picker, and the data
migration — upgrades change nothing, fresh installs grant Everyone only the low-risk tools."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.test import Client

from chat_app.models import Agent, Conversation
from tools_app.models import AuditRecord, ToolGrant, ToolGroupConfig, ToolSource
from tools_app.services import grants
from tools_app.services.grants import everyone_group, granted_tools

pytestmark = [pytest.mark.django_db, pytest.mark.grants]


@pytest.fixture
def support(db: None) -> Group:
    ToolGrant.objects.all().delete()
    everyone_group()
    return Group.objects.create(name="support")


def test_the_editor_saves_tool_groups_functions_sources_and_profiles(admin_client, member, support):
    support.user_set.add(member)
    ToolSource.objects.create(kind="mcp", name="wiki", label="Team wiki")
    researcher = Agent.objects.create(name="Researcher 2")
    url = f"/people/groups/{support.pk}/grants/"
    page = admin_client.get(f"/people/groups/{support.pk}/").content.decode()
    assert f'href="{url}"' in page
    html = admin_client.get(url).content.decode()
    assert 'name="tool_group" value="shell"' in html and 'value="wiki"' in html
    response = admin_client.post(
        url,
        {
            "tool_group": ["time"],
            "function": ["file_read"],
            "source": ["wiki"],
            "agent": ["Researcher 2"],
        },
    )
    assert response.status_code == 302
    assert grants.group_grants(support) == {
        "group": ["time"],
        "function": ["file_read"],
        "source": ["wiki"],
    }
    assert list(researcher.groups.all()) == [support]
    assert granted_tools(member.pk) == {"current_time", "file_read"}  # wiki has no tools yet
    record = AuditRecord.objects.get(kind="people", status="grants_changed")
    assert record.detail["after"]["agents"] == ["Researcher 2"]
    html = admin_client.get(url).content.decode()
    assert 'value="time" id="tg-time" checked' in html


def test_unknown_names_change_nothing(admin_client, support):
    ToolGrant.objects.create(group=support, kind="group", name="time")
    url = f"/people/groups/{support.pk}/grants/"
    response = admin_client.post(url, {"tool_group": ["time", "nosuch"], "function": ["x"]})
    assert response.status_code == 400
    assert "No tool group named" in response.content.decode()
    assert grants.group_grants(support)["group"] == ["time"]
    response = admin_client.post(url, {"agent": ["Ghost"]})
    assert "No agent profile named" in response.content.decode()


def test_members_cannot_open_or_post_the_editor(member_client, member, support):
    url = f"/people/groups/{support.pk}/grants/"
    assert member_client.get(url).status_code == 403
    assert member_client.post(url, {"tool_group": ["shell"]}).status_code == 403
    assert not ToolGrant.objects.exists()
    assert Client().get(url).status_code == 302  # to the login page


def test_an_unknown_group_id_is_not_found(admin_client):
    assert admin_client.get("/people/groups/999999/grants/").status_code == 404


def test_the_agent_picker_lists_and_accepts_only_granted_profiles(member_client, member, support):
    everyone = everyone_group()
    shared = Agent.objects.create(name="Shared")
    shared.groups.add(everyone)
    secret = Agent.objects.create(name="Secret")  # given to no group: admins only
    conversation = Conversation.objects.create(owner=member)
    html = member_client.get(f"/c/{conversation.pk}/").content.decode()
    assert ">Shared<" in html and ">Secret<" not in html
    # The attack: a crafted POST naming the profile the picker does not offer.
    html = member_client.post(f"/c/{conversation.pk}/agent/", {"agent": secret.pk}).content.decode()
    assert "not granted to you" in html
    conversation.refresh_from_db()
    assert conversation.agent_id is None
    member_client.post(f"/c/{conversation.pk}/agent/", {"agent": shared.pk})
    conversation.refresh_from_db()
    assert conversation.agent_id == shared.pk
    secret.groups.add(support)
    support.user_set.add(member)
    member_client.post(f"/c/{conversation.pk}/agent/", {"agent": secret.pk})
    conversation.refresh_from_db()
    assert conversation.agent_id == secret.pk


def test_grants_follow_memberships_and_the_staff_flag(member, support):
    ToolGrant.objects.create(group=support, kind="function", name="shell_exec")
    assert granted_tools(member.pk) == frozenset()
    support.user_set.add(member)
    assert granted_tools(member.pk) == {"shell_exec"}
    member.is_staff = True
    member.save()
    assert granted_tools(member.pk) is None  # admins may use everything
    member.is_staff = False
    member.save(update_fields=["is_staff"])
    member.groups.remove(support)
    assert granted_tools(member.pk) == frozenset()
    ToolGrant.objects.create(group=everyone_group(), kind="group", name="time")
    assert granted_tools(member.pk) == {"current_time"}


def test_a_deleted_source_takes_its_grants_along(support):
    source = ToolSource.objects.create(kind="mcp", name="wiki")
    ToolGrant.objects.create(group=support, kind="source", name="wiki")
    source.delete()
    assert not ToolGrant.objects.exists()


# --- the data migration ----------------------------------------------------------------------
tools_migration = importlib.import_module("tools_app.migrations.0011_tool_grants")
chat_migration = importlib.import_module("chat_app.migrations.0012_agent_groups")


def _everyone_grants() -> set[tuple[str, str]]:
    return set(ToolGrant.objects.filter(group__name="Everyone").values_list("kind", "name"))


def test_a_fresh_install_grants_everyone_the_low_risk_tools_only(db: None) -> None:
    ToolGrant.objects.all().delete()
    custom = Agent.objects.create(name="Custom")
    general = Agent.objects.create(name="General")
    tools_migration.initial_grants(apps, None)
    chat_migration.initial_agent_groups(apps, None)
    assert _everyone_grants() == {("group", n) for n in grants.FRESH_INSTALL_GROUPS} | {
        ("function", n) for n in grants.FRESH_INSTALL_FUNCTIONS
    }
    # The migration's lists are the ones the app shows.
    assert tools_migration.FRESH_INSTALL_GROUPS == grants.FRESH_INSTALL_GROUPS
    assert tools_migration.FRESH_INSTALL_FUNCTIONS == grants.FRESH_INSTALL_FUNCTIONS
    from django.contrib.auth import get_user_model

    member = get_user_model().objects.create_user("mia")
    granted = granted_tools(member.pk)
    assert granted is not None
    assert {"current_time", "memory_search", "web_search", "file_read"} <= granted
    assert not {"shell_exec", "file_write", "http_request", "docker_exec", "send_message"} & granted
    assert list(general.groups.values_list("name", flat=True)) == ["Everyone"]
    assert not custom.groups.exists()


def test_an_upgrade_changes_nothing(member) -> None:
    ToolGrant.objects.all().delete()
    ToolGroupConfig.objects.create(name="docker", enabled=False)
    ToolSource.objects.create(kind="mcp", name="wiki")
    custom = Agent.objects.create(name="Custom")
    tools_migration.initial_grants(apps, None)
    chat_migration.initial_agent_groups(apps, None)
    expected = {("group", n) for n in tools_migration.SHIPPED_GROUPS if n != "docker"}
    assert _everyone_grants() == expected | {("source", "wiki")}
    granted = granted_tools(member.pk)
    assert granted is not None and {"shell_exec", "http_request", "file_write"} <= granted
    assert list(custom.groups.values_list("name", flat=True)) == ["Everyone"]


def test_the_shipped_groups_are_the_registered_ones() -> None:
    from tools_app.registry import GROUPS

    imported = ("mcp_", "openapi_")  # groups made from sources other tests added
    builtin = {name for name in GROUPS if not name.startswith(imported)}
    # tool_search came after grants: tools_app 0026 grants it to Everyone, upgrade or not.
    assert builtin == set(tools_migration.SHIPPED_GROUPS) | {"tool_search"}


def test_the_tools_manager_shows_what_is_not_granted_yet(admin_client, support):
    ToolGrant.objects.create(group=everyone_group(), kind="group", name="time")
    ToolGrant.objects.create(group=support, kind="group", name="time")
    ToolGrant.objects.create(group=support, kind="function", name="file_read")
    html = admin_client.get("/tools/").content.decode()
    assert "<strong>Everyone</strong> (every user) is granted the Time group." in html
    time_row = html[html.index('id="group-time"') :]
    assert "Granted to Everyone, support" in time_row[: time_row.index("</tbody>")]
    shell_row = html[html.index('id="group-shell"') :]
    assert "not granted yet" in shell_row[: shell_row.index("</tbody>")]
    file_row = html[html.index('id="group-file"') :]
    assert "1 of 4 functions granted" in file_row[: file_row.index("</tbody>")]


def test_a_token_cannot_be_made_with_a_profile_not_granted(member_client, member, support):
    from tools_app.models import ApiToken

    secret = Agent.objects.create(name="Secret")
    html = member_client.get("/tokens/").content.decode()
    assert ">Secret<" not in html
    response = member_client.post("/tokens/", {"name": "x", "agent": secret.pk}, follow=True)
    assert "not granted to you" in response.content.decode()
    assert not ApiToken.objects.exists()
