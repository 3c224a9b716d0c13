"""The audit log: filters, full-text search (SQLite and Postgres), exports, links, append-only."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from asgiref.sync import async_to_sync
from django.contrib.admin.sites import site
from django.test import RequestFactory
from django.utils import timezone

from chat_app.models import Conversation
from tests.helpers import wait_for
from tools_app.manager.audit_selectors import (
    EXPORT_FIELDS,
    AuditFilters,
    audit_filter_choices,
    audit_records,
)
from tools_app.models import AuditRecord
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind


def record(**fields) -> AuditRecord:
    days_ago = fields.pop("days_ago", 0)
    defaults = {"kind": "call", "tool": "current_time", "group": "time", "status": "succeeded"}
    rec = AuditRecord.objects.create(**{**defaults, **fields})
    if days_ago:
        AuditRecord.objects.filter(pk=rec.pk).update(
            created_at=timezone.now() - timedelta(days=days_ago)
        )
    return rec


@pytest.fixture
def log(db):
    return {
        "paris": record(arguments={"timezone": "Europe/Paris"}, username="alice", source="chat"),
        "denied": record(
            tool="shell_exec",
            group="shell",
            status="denied",
            username="bob",
            arguments={"command": "rm -rf /"},
            policy_verdict="denied",
            policy_reason="policy: rm is not allowed",
            error="policy: rm is not allowed",
        ),
        "old": record(arguments={"timezone": "UTC"}, username="alice", days_ago=10),
        "cafe": record(
            arguments={"query": "café au lait"}, result={"answer": "Grüße"}, username="alice"
        ),
        "settings": record(
            kind="settings",
            tool="",
            group="time",
            status="changed",
            username="root",
            detail={"changed": ["timeout_seconds"]},
        ),
    }


def ids(**filters) -> set[int]:
    return set(audit_records(AuditFilters(**filters)).values_list("pk", flat=True))


def test_it_filters_by_tool_status_user_kind_and_date(log):
    assert ids(tool="shell_exec") == {log["denied"].pk}
    assert ids(tool="time") == {log["settings"].pk}  # a group's settings changes
    assert ids(status="denied") == {log["denied"].pk}
    assert ids(user="bob") == {log["denied"].pk}
    assert ids(kind="settings") == {log["settings"].pk}
    today = timezone.localdate()
    assert log["old"].pk not in ids(date_from=today - timedelta(days=1))
    assert ids(date_to=today - timedelta(days=5)) == {log["old"].pk}
    assert ids(date_from=today, date_to=today) == ids() - {log["old"].pk}


def test_the_tool_filter_offers_each_tool_and_each_group_that_it_matches(log):
    # A group is offered where picking it finds something: records that name no tool
    # (settings changes); "shell", only ever the group of a call, would find nothing.
    choices = audit_filter_choices()["tool"]
    assert choices == ["current_time", "shell_exec", "time"]
    assert all(ids(tool=choice) for choice in choices)


@pytest.mark.modes
@pytest.mark.parametrize(
    ("q", "expected"),
    [
        ("europe/PARIS", ["paris"]),  # in arguments, any case
        ("not allowed", ["denied"]),  # in the error
        ("rm -rf", ["denied"]),
        ("café", ["cafe"]),  # non-ASCII in arguments
        ("grüße", ["cafe"]),  # and in the result
        ("shell_exec", ["denied"]),  # the tool name
        ("nothing like this", []),
    ],
)
def test_search_looks_into_arguments_results_errors_and_tools(log, q, expected):
    assert ids(q=q) == {log[name].pk for name in expected}


def test_the_list_page_filters_and_keeps_filters_in_export_links(staff_client, log):
    html = staff_client.get("/tools/audit/?user=alice&q=paris").content.decode()
    assert "1 record matches" in html
    assert "/tools/audit/export.csv?user=alice&amp;q=paris" in html
    assert "/tools/audit/export.jsonl?user=alice&amp;q=paris" in html


def read(response) -> str:
    """The body of an export: an async stream (the server is ASGI), read as the server would."""
    assert response.status_code == 200

    async def collect() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    return async_to_sync(collect)().decode()


def test_csv_export_has_one_row_per_record_with_json_columns(staff_client, log):
    response = staff_client.get("/tools/audit/export.csv?user=alice")
    assert response["Content-Disposition"].startswith('attachment; filename="audit-')
    rows = list(csv.reader(io.StringIO(read(response))))
    assert tuple(rows[0]) == EXPORT_FIELDS
    body = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    assert {int(r["id"]) for r in body} == {log["paris"].pk, log["old"].pk, log["cafe"].pk}
    cafe = next(r for r in body if int(r["id"]) == log["cafe"].pk)
    assert json.loads(cafe["arguments"]) == {"query": "café au lait"}
    assert json.loads(cafe["result"]) == {"answer": "Grüße"}


def test_csv_cells_that_would_be_formulas_are_defused(staff_client, db):
    record(error='=HYPERLINK("http://evil")', status="failed")
    rows = list(csv.reader(io.StringIO(read(staff_client.get("/tools/audit/export.csv")))))
    assert rows[1][EXPORT_FIELDS.index("error")] == '\'=HYPERLINK("http://evil")'


def test_jsonl_export_is_one_json_object_per_line(staff_client, log):
    lines = read(staff_client.get("/tools/audit/export.jsonl?status=denied")).splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert set(row) == set(EXPORT_FIELDS)
    assert row["arguments"] == {"command": "rm -rf /"} and row["policy_verdict"] == "denied"
    assert row["created_at"].startswith(str(timezone.now().year))


def test_exports_page_through_large_logs(staff_client, db):
    AuditRecord.objects.bulk_create(
        [AuditRecord(kind="call", tool="current_time", status="succeeded") for _ in range(1203)]
    )
    lines = read(staff_client.get("/tools/audit/export.jsonl")).splitlines()
    got = [json.loads(line)["id"] for line in lines]
    assert len(got) == 1203 and len(set(got)) == 1203 and got == sorted(got, reverse=True)


def test_the_list_paginates(staff_client, db):
    AuditRecord.objects.bulk_create(
        [AuditRecord(kind="call", tool="current_time", status="succeeded") for _ in range(51)]
    )
    html = staff_client.get("/tools/audit/?tool=current_time").content.decode()
    assert "Page 1 of 2" in html and "?tool=current_time&amp;page=2" in html


@pytest.mark.modes
def test_the_card_link_opens_the_calls_record_and_it_links_back(staff_client, user):
    conversation = Conversation.objects.create(owner=user, title="Clock talk")
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "Nowhere/Land"}),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
    )
    response = staff_client.get(f"/tools/audit/?call={call.pk}")
    rec = AuditRecord.objects.get(kind="call", tool_call=call)
    assert response.status_code == 302 and response.url == f"/tools/audit/{rec.pk}/"
    html = staff_client.get(response.url).content.decode()
    assert f'href="/c/{conversation.pk}/#toolcall-{call.pk}"' in html and "Clock talk" in html
    assert "unknown timezone" in html and "alice" in html
    conversation.delete()  # the record outlives it
    html = staff_client.get(response.url).content.decode()
    assert "deleted conversation: Clock talk" in html
    assert f'href="/c/{conversation.pk}/' not in html


@pytest.mark.modes
@pytest.mark.parametrize("approval", [False, True], ids=["queued", "approved"])
def test_a_call_that_ran_has_one_complete_record(user, staff_user, approval):
    from tools_app.models import ToolCall, ToolFunctionConfig
    from tools_app.services.approval import toolcall_approve
    from tools_app.services.execution import toolcall_execute

    if approval:
        ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    conversation = Conversation.objects.create(owner=user, title="Clock talk")
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
    )
    if approval:
        call = toolcall_approve(call=call, user=staff_user)
    # Distributed, the approval already queued it for a real worker: whichever of the two
    # claims it runs it, the other finds it taken. Either way: one complete record.
    toolcall_execute(tool_call_id=call.pk)
    wait_for(
        lambda: ToolCall.objects.get(pk=call.pk).status in ToolCall.TERMINAL,
        message="the call to finish",
    )
    assert ToolCall.objects.get(pk=call.pk).status == "succeeded"
    rec = AuditRecord.objects.get(kind="call", tool_call=call)  # one record, not two
    assert (rec.status, rec.username) == ("succeeded", "alice")
    assert rec.conversation_title == "Clock talk"
    assert rec.result["timezone"] == "UTC" and rec.started_at and rec.finished_at


def test_a_settings_change_shows_before_and_after(staff_client, staff_user):
    from tools_app.services.settings import group_settings_save

    group_settings_save(user=staff_user, group="time", values={"timeout_seconds": 11})
    rec = AuditRecord.objects.get(kind="settings")
    html = staff_client.get(f"/tools/audit/{rec.pk}/").content.decode()
    assert "timeout_seconds" in html
    assert '<pre class="value before">5</pre>' in html
    assert '<pre class="value after">11</pre>' in html


def test_the_log_is_append_only(db, staff_user):
    rec = record()
    with pytest.raises(PermissionError):
        AuditRecord.objects.all().delete()
    with pytest.raises(PermissionError):
        rec.delete()
    admin = site._registry[AuditRecord]
    request = RequestFactory().get("/admin/tools_app/auditrecord/")
    request.user = staff_user
    assert not admin.has_add_permission(request)
    assert not admin.has_change_permission(request, rec)
    assert not admin.has_delete_permission(request, rec)
    assert "delete_selected" not in admin.get_actions(request)
    assert AuditRecord.objects.count() == 1


def test_the_admin_shows_records_but_cannot_delete_them(admin_client, db):
    rec = record()
    assert admin_client.get("/admin/tools_app/auditrecord/").status_code == 200
    page = admin_client.get(f"/admin/tools_app/auditrecord/{rec.pk}/change/")
    assert page.status_code == 200 and b'name="_save"' not in page.content
    assert (
        admin_client.post(
            f"/admin/tools_app/auditrecord/{rec.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    assert AuditRecord.objects.filter(pk=rec.pk).exists()


def test_every_tools_model_is_in_the_admin():
    from django.apps import apps

    for model in apps.get_app_config("tools_app").get_models():
        assert model in site._registry, model
