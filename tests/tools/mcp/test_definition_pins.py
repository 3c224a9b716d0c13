"""Pinned definitions against a real MCP server whose tools change at run time: a tool added, a
description rewritten, a schema or its annotations changed, a tool removed. Each change ends
held for review (new, changed, gone) — never offered unreviewed, refused at binding, audited
with its diff — whether the server announced it (list_changed) or a refresh found it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers import wait_for
from tests.tools.mcp.changing_server import serve_changing
from tools_app import selectors
from tools_app.executors.mcp.services import mcp_refresh, mcp_server_add
from tools_app.models import AuditRecord, ToolCall, ToolSource
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute
from tools_app.services.pins import (
    definition_pin,
    pending,
    source_review_decide,
    source_review_policy_set,
)


@pytest.fixture
def changing_url() -> Iterator[str]:
    from tools_app.executors.mcp.runtime import runtime

    with serve_changing() as url:
        yield url
        runtime().close_all(timeout=5)


@pytest.fixture
def source(changing_url: str, transactional_db: None, staff_user: Any) -> ToolSource:
    source = mcp_server_add(name="shifty", url=changing_url, allow_private=True, user=staff_user)
    mcp_refresh(source)
    source.refresh_from_db()
    return source


def run(user: Any, tool: str, arguments: dict[str, Any]) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
    call.refresh_from_db()
    return call


def change(user: Any, what: str, *, announce: bool = True) -> None:
    call = run(user, "change", {"what": what, "announce": announce})
    assert call.status == "succeeded", call.result


def held(source: ToolSource, name: str, status: str) -> dict[str, Any]:
    def found() -> dict[str, Any] | None:
        source.refresh_from_db()
        return next(
            (e for e in pending(source) if e["name"] == name and e["status"] == status), None
        )

    return wait_for(found, timeout=15, message=f"{name} to be held as {status}")


def offered_names() -> set[str]:
    return {t.tool_name for t in selectors.enabled_tools()}


def records(name: str, status: str) -> list[AuditRecord]:
    return list(AuditRecord.objects.filter(kind="definition", tool=name, status=status))


def test_creating_a_source_pins_its_first_listing(source: ToolSource) -> None:
    assert source.pinned_at is not None and source.review == []
    by_name = {f["name"]: f for f in source.functions}
    assert set(by_name) == {"note", "weather", "farewell", "change"}
    assert by_name["weather"]["annotations"] == {"readOnlyHint": True}
    for function in source.functions:
        assert function["pin"] == definition_pin(function, "mcp")
    [record] = AuditRecord.objects.filter(kind="definition", status="pinned")
    assert set(record.detail["functions"]) == set(by_name)


@pytest.mark.modes
def test_a_tool_added_at_run_time_is_offered_nowhere_and_refused_until_accepted(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "add")  # announced: the server sends notifications/tools/list_changed
    entry = held(source, "sneaky", "new")
    assert selectors.tool_named("sneaky") is None and "sneaky" not in offered_names()
    refused = run(staff_user, "sneaky", {"text": "hi"})
    assert refused.status == "denied" and refused.policy_verdict == "review"
    assert refused.error == "sneaky is waiting for an admin's review of its new definition"
    [record] = records("sneaky", "new")
    assert record.detail["origin"] == "list_changed"
    assert "+A tool added at run time." in record.detail["diff"]["description"]
    assert '+  "name": "sneaky"' in record.detail["diff"]["schema"]
    assert record.pk == entry["audit_id"]

    source_review_decide(source, remote="sneaky", accept=True, user=staff_user)
    assert "sneaky" in offered_names()
    ran = run(staff_user, "sneaky", {"text": "hi"})
    assert ran.status == "succeeded", ran.result
    assert ran.result["text"] == "sneaky: hi"
    assert records("sneaky", "accepted")[0].username == "root"


def test_a_rewritten_description_keeps_the_pinned_one_for_the_model(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "describe")
    held(source, "note", "changed")
    note = selectors.tool_named("note")
    assert note is not None and note.description() == "Take a note."
    assert "note" in offered_names()  # the pinned copy is what the model sees
    refused = run(staff_user, "note", {"text": "x"})
    assert refused.status == "denied" and refused.policy_verdict == "review"
    assert "changed on its server and is waiting for an admin's review" in refused.error
    [record] = records("note", "changed")
    assert record.detail["diff"]["description"].splitlines()[-2:] == [
        "-Take a note.",
        "+Take a note and keep it for a week.",
    ]
    assert record.detail["diff"]["schema"] == ""

    # Rejected: the pinned copy is served again and the same change is not raised again.
    source_review_decide(source, remote="note", accept=False, user=staff_user)
    assert run(staff_user, "note", {"text": "x"}).status == "succeeded"
    mcp_refresh(source)
    source.refresh_from_db()
    assert pending(source) == [] and len(records("note", "changed")) == 1
    assert selectors.tool_named("note").description() == "Take a note."  # type: ignore[union-attr]


def test_a_changed_schema_is_refused_or_served_pinned_as_the_admin_chose(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "schema", announce=False)
    mcp_refresh(source)  # found by a refresh this time
    held(source, "weather", "changed")
    [record] = records("weather", "changed")
    assert record.detail["origin"] == "refresh"
    assert '+      "units": {' in record.detail["diff"]["schema"]
    weather = selectors.tool_named("weather")
    assert weather is not None
    assert "units" not in weather.openai_schema()["function"]["parameters"]["properties"]
    assert run(staff_user, "weather", {"city": "Oslo"}).status == "denied"

    source_review_policy_set(source, auto_accept=False, serve_pinned=True, user=staff_user)
    served = run(staff_user, "weather", {"city": "Oslo"})
    assert served.status == "succeeded", served.result
    assert served.result["text"] == "sunny in Oslo (metric)"  # the server took the old args
    missing = run(staff_user, "weather", {})  # checked against the pinned schema
    assert missing.status == "failed" and "'city' is required" in missing.error
    policy = AuditRecord.objects.filter(kind="settings", group="mcp_shifty").latest("id")
    assert policy.detail["after"] == {"auto_accept": False, "serve_pinned": True}
    assert pending(source)[0]["name"] == "weather"  # still waiting for the review


def test_changed_annotations_are_a_changed_definition(source: ToolSource, staff_user: Any) -> None:
    change(staff_user, "annotate")
    held(source, "weather", "changed")
    [record] = records("weather", "changed")
    assert '+    "destructiveHint": true,' in record.detail["diff"]["schema"]
    assert '-    "readOnlyHint": true' in record.detail["diff"]["schema"]


def test_a_removed_tool_is_marked_gone_and_dropped_when_reviewed(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "remove")
    held(source, "farewell", "gone")
    assert selectors.tool_named("farewell") is None and "farewell" not in offered_names()
    refused = run(staff_user, "farewell", {"name": "Bob"})
    assert refused.status == "denied"
    assert "farewell is no longer offered by the server (mcp:shifty)" in refused.error
    assert (
        "-Say goodbye to someone." in records("farewell", "gone")[0].detail["diff"]["description"]
    )
    source_review_decide(source, remote="farewell", accept=False, user=staff_user)
    source.refresh_from_db()
    assert "farewell" not in {f["name"] for f in source.functions} and source.review == []


def test_a_change_raised_again_after_the_server_changes_once_more(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "describe")
    first = held(source, "note", "changed")
    change(staff_user, "poison")

    def second() -> bool:
        source.refresh_from_db()
        return pending(source)[0]["offered_pin"] != first["offered_pin"]

    wait_for(second, timeout=15, message="the second change to be held")
    assert len(records("note", "changed")) == 2
    # An Accept made on the page showing the first change is refused: never accepted unseen.
    from tools_app.services.pins import ReviewError

    with pytest.raises(ReviewError, match="changed again"):
        source_review_decide(
            source, remote="note", accept=True, user=staff_user, pin=first["offered_pin"]
        )
    assert selectors.tool_named("note").description() == "Take a note."  # type: ignore[union-attr]


def test_auto_accept_applies_changes_at_once_and_audits_them(
    source: ToolSource, staff_user: Any
) -> None:
    source_review_policy_set(source, auto_accept=True, serve_pinned=False, user=staff_user)
    change(staff_user, "describe")

    def accepted() -> bool:
        note = selectors.tool_named("note")
        return note is not None and "for a week" in note.description()

    wait_for(accepted, timeout=15, message="the change to be accepted automatically")
    source.refresh_from_db()
    assert pending(source) == []
    [record] = records("note", "auto-accepted")
    assert "+Take a note and keep it for a week." in record.detail["diff"]["description"]
    assert run(staff_user, "note", {"text": "x"}).status == "succeeded"


def test_the_server_taking_a_change_back_ends_its_review(
    source: ToolSource, staff_user: Any
) -> None:
    change(staff_user, "describe")
    held(source, "note", "changed")
    change(staff_user, "restore")

    def cleared() -> bool:
        source.refresh_from_db()
        return pending(source) == []

    wait_for(cleared, timeout=15, message="the review to end")
    assert run(staff_user, "note", {"text": "x"}).status == "succeeded"


def test_detections_and_decisions_are_webhook_events(source: ToolSource, staff_user: Any) -> None:
    from platform_app.models import WebhookDelivery
    from platform_app.webhooks.services import endpoint_create

    endpoint_create(
        user=staff_user,
        name="security desk",
        url="http://127.0.0.63/hook",
        events=["tool.definition_changed", "tool.definition_reviewed"],
        allow_private=True,
    )
    change(staff_user, "add")
    held(source, "sneaky", "new")
    changed = wait_for(
        lambda: WebhookDelivery.objects.filter(event="tool.definition_changed").first(),
        timeout=10,
        message="the detection's event",
    )
    record = AuditRecord.objects.get(kind="definition", tool="sneaky", status="new")
    assert changed.payload == {
        "source": "mcp:shifty",
        "group": "mcp_shifty",
        "function": "sneaky",
        "remote": "sneaky",
        "change": "new",
        "status": "new",
        "pinned_pin": "",
        "offered_pin": record.detail["offered_pin"],
        "audit_record_id": record.pk,
        "user": "",
    }
    source_review_decide(source, remote="sneaky", accept=False, user=staff_user)
    reviewed = WebhookDelivery.objects.get(event="tool.definition_reviewed")
    assert reviewed.payload["status"] == "rejected" and reviewed.payload["user"] == "root"
