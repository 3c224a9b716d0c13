"""An admin invites a person from the People page; the person follows the one-time link in
another browser, chooses a password and logs in; the link does not work a second time."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from tests.e2e.conftest import docs_shot, login, wait_connected
from tools_app.models import AuditRecord

pytestmark = [pytest.mark.e2e]


@pytest.fixture
def admin(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("ada", password="ada-password-1", is_staff=True)


def test_an_admin_invites_a_person_who_sets_a_password_and_logs_in(page, browser, admin):
    Group.objects.create(name="support")
    login(page, "ada", "ada-password-1")
    wait_connected(page)
    page.get_by_role("link", name="People").click()
    page.get_by_role("link", name="Add user").click()
    page.get_by_label("Username").fill("ivy")
    page.get_by_label("Email").fill("ivy@example.com")
    expect(page.get_by_label("Password", exact=True)).to_be_hidden()  # invite is the default
    page.get_by_label("support").check()
    page.get_by_role("button", name="Add user").click()
    expect(page.get_by_role("heading", name="Invitation link for ivy")).to_be_visible()
    link = page.get_by_label("One-time link").input_value()
    assert "/accounts/set-password/" in link

    invitee = browser.new_context(base_url=page.url.split("/people/")[0])
    try:
        other = invitee.new_page()
        other.goto(link)
        expect(other.get_by_role("heading", name="Choose your password")).to_be_visible()
        other.get_by_label("New password", exact=True).fill("ivy-password-123")
        other.get_by_label("New password confirmation").fill("ivy-password-123")
        other.get_by_role("button", name="Set password").click()
        expect(other.get_by_role("heading", name="Your password is set")).to_be_visible()
        other.get_by_role("link", name="Log in").click()
        login(other, "ivy", "ivy-password-123")
        wait_connected(other)
        expect(other.locator(".user-menu-name")).to_have_text("ivy")
        expect(other.get_by_role("link", name="People")).to_have_count(0)  # not an admin
        other.goto(link)
        expect(
            other.get_by_role("heading", name="This link does not work any more")
        ).to_be_visible()
    finally:
        invitee.close()

    ivy = get_user_model().objects.get(username="ivy")
    assert [g.name for g in ivy.groups.all()] == ["support"]
    statuses = set(AuditRecord.objects.filter(kind="people").values_list("status", flat=True))
    assert {"invited", "password_set"} <= statuses
    page.goto("/people/")
    expect(page.locator(".people-table")).to_contain_text("ivy")


def test_a_person_changes_their_password_from_the_user_menu(page, admin):
    login(page, "ada", "ada-password-1")
    wait_connected(page)  # leave the chat page only once its socket is up, not mid-handshake
    page.locator(".user-menu summary").click()
    page.get_by_role("link", name="Password").click()
    page.get_by_label("Old password").fill("ada-password-1")
    page.get_by_label("New password", exact=True).fill("ada-password-2")
    page.get_by_label("New password confirmation").fill("ada-password-2")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Your password is changed.")).to_be_visible()
    page.locator(".user-menu summary").click()
    page.get_by_role("button", name="Log out").click()
    login(page, "ada", "ada-password-2")
    wait_connected(page)
    expect(page.locator(".user-menu-name")).to_have_text("ada")


@pytest.mark.grants
def test_an_admin_grants_a_group_a_whole_tool_group_and_a_profile(page, admin):
    """The grant editor: ticking a whole group ticks (and locks) its functions; saved, a
    member of the group may use them. Screenshots for the docs."""

    from chat_app.models import Agent
    from tools_app.models import ToolGrant
    from tools_app.services.grants import everyone_group, granted_tools

    ToolGrant.objects.all().delete()
    everyone_group()
    support = Group.objects.create(name="support")
    member = get_user_model().objects.create_user("mia")
    support.user_set.add(member)
    Agent.objects.get_or_create(name="General")
    ToolGrant.objects.create(group=support, kind="function", name="current_time")
    login(page, "ada", "ada-password-1")
    page.goto(f"/people/groups/{support.pk}/")
    page.get_by_role("link", name="Grants").click()
    expect(page.get_by_role("heading", name="What “support” may use")).to_be_visible()
    shell_exec = page.locator("#fn-shell_exec")
    expect(shell_exec).not_to_be_checked()
    page.locator("#tg-shell").check()
    expect(shell_exec).to_be_checked()
    expect(shell_exec).to_be_disabled()
    page.get_by_label("General").check()
    docs_shot(page, "people-grants-1280")
    page.set_viewport_size({"width": 390, "height": 844})
    docs_shot(page, "people-grants-390")
    page.set_viewport_size({"width": 1280, "height": 860})
    page.get_by_role("button", name="Save grants").click()
    expect(page.get_by_text("Saved what “support” may use.")).to_be_visible()
    assert granted_tools(member.pk) == {"current_time", "shell_exec"}
    assert list(Agent.objects.get(name="General").groups.all()) == [support]
