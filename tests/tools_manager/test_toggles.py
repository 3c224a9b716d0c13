"""Switching groups and functions on and off: the row swaps, the change is audited, and a
disabled tool disappears from the schemas and answers "disabled" to a slash command."""

from __future__ import annotations

import re

from django.contrib.auth.models import Group

from chat_app.models import Conversation
from chat_app.services.slash import slash_run
from tests.tools_manager.conftest import HTMX
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig, ToolGroupConfig


def schema_names(client) -> list[str]:
    return [t["function"]["name"] for t in client.get("/api/tools/schemas.json").json()["tools"]]


def slash_time(user) -> ToolCall:
    conversation = Conversation.objects.create(owner=user, title="t")
    slash_run(conversation=conversation, user_id=user.pk, text='/current_time {"timezone": "UTC"}')
    return ToolCall.objects.get(conversation=conversation)


def test_switching_a_group_off_swaps_its_rows_and_is_audited(staff_client, staff_user):
    response = staff_client.post("/tools/groups/time/enabled/", {"enabled": "0"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<tbody id="group-time"') and "is-disabled" in html
    switch = re.search(r'<input[^>]*id="switch-group-time"[^>]*>', html)
    assert switch and "checked" not in switch.group(0)
    assert ToolGroupConfig.objects.get(name="time").enabled is False
    record = AuditRecord.objects.get(kind="settings")
    assert (record.group, record.detail["before"], record.detail["after"]) == (
        "time",
        {"enabled": True},
        {"enabled": False},
    )


def test_a_switched_off_group_is_not_offered_and_its_slash_command_answers_disabled(
    staff_client, staff_user, user
):
    assert "current_time" in schema_names(staff_client)
    staff_client.post("/tools/groups/time/enabled/", {"enabled": "0"}, **HTMX)
    assert "current_time" not in schema_names(staff_client)
    call = slash_time(user)
    assert call.status == "denied" and "disabled" in call.error
    staff_client.post("/tools/groups/time/enabled/", {"enabled": ["0", "1"]}, **HTMX)
    assert "current_time" in schema_names(staff_client)


def test_a_switched_off_function_is_not_offered_and_answers_disabled(staff_client, user):
    staff_client.post("/tools/functions/current_time/enabled/", {"enabled": "0"}, **HTMX)
    assert ToolFunctionConfig.objects.get(name="current_time").enabled is False
    assert "current_time" not in schema_names(staff_client)
    call = slash_time(user)
    assert call.status == "denied"
    assert call.error == "tool 'current_time' is disabled by an administrator"
    record = AuditRecord.objects.get(kind="settings")
    assert (record.group, record.tool) == ("time", "current_time")


def test_function_settings_store_approval_mode_and_ask_why(staff_client):
    response = staff_client.post(
        "/tools/functions/current_time/reasoning_for_call/",
        {"reasoning_for_call": ["0", "1"]},
        **HTMX,
    )
    assert response.status_code == 200
    response = staff_client.post(
        "/tools/functions/current_time/approval/", {"approval_mode": "requester"}, **HTMX
    )
    assert response.status_code == 200
    assert 'value="requester" selected' in response.content.decode()
    config = ToolFunctionConfig.objects.get(name="current_time")
    assert config.enabled and config.approval_mode == "requester" and config.reasoning_for_call
    assert AuditRecord.objects.filter(kind="settings", tool="current_time").count() == 2


def test_the_function_page_sets_approver_groups(staff_client):
    leads = Group.objects.create(name="leads")
    response = staff_client.post(
        "/tools/functions/current_time/approval/",
        {"approval_mode": "approver", "approvers_posted": "1", "approver_groups": [leads.pk]},
    )
    assert response.status_code == 302
    config = ToolFunctionConfig.objects.get(name="current_time")
    assert config.approval_mode == "approver"
    assert list(config.approver_groups.all()) == [leads]
    record = AuditRecord.objects.get(kind="settings", tool="current_time")
    assert record.detail["after"] == {"approval_mode": "approver", "approvers": ["leads"]}
    page = staff_client.get("/tools/").content.decode()
    assert 'value="approver" selected' in page and ">leads</a>" in page
    # A mode that does not exist is refused; nothing changes.
    staff_client.post("/tools/functions/current_time/approval/", {"approval_mode": "anyone"})
    assert ToolFunctionConfig.objects.get(name="current_time").approval_mode == "approver"


def test_posting_the_same_state_again_records_nothing(staff_client):
    staff_client.post("/tools/groups/time/enabled/", {"enabled": ["0", "1"]}, **HTMX)
    assert not AuditRecord.objects.exists()


def test_without_htmx_a_switch_redirects_back_to_the_manager(staff_client):
    response = staff_client.post("/tools/groups/time/enabled/", {"enabled": "0"})
    assert response.status_code == 302 and response.url == "/tools/"


def test_unknown_groups_functions_and_switches_are_404(staff_client):
    assert staff_client.post("/tools/groups/nope/enabled/", {"enabled": "0"}).status_code == 404
    assert staff_client.post("/tools/functions/nope/enabled/", {}).status_code == 404
    assert staff_client.post("/tools/functions/current_time/is_staff/", {}).status_code == 404
    assert staff_client.get("/tools/groups/time/enabled/").status_code == 405
