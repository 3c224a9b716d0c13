"""Tool calls of an imported conversation are records (issue 33, finding 6): marked imported,
shown as such on their cards, and counted nowhere — not on the Usage page, not against a
tool-call quota, not against a conversation's or a tool's call limits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from chat_app.models import Conversation
from platform_app.api.rest.schemas import ToolCallOut
from platform_app.models import Quota
from platform_app.usage import quotas
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.runtime import BindContext
from tools_app.services.binding import CallLimits, CallRequest, toolcall_bind

# Both modes: the quota's and the limits' counts run on PostgreSQL in the distributed pass.
pytestmark = [pytest.mark.modes]

FORGED = {
    "tool": "shell_exec",
    "arguments": {"command": "rm -rf /"},
    "status": "succeeded",
    "policy_verdict": "allowed",
    "result": {"success": True, "stdout": ""},
    "duration_ms": 5,
}
EXPORT = {
    "format": "control-center.conversation",
    "version": 1,
    "title": "Forged",
    "messages": [
        {"role": "assistant", "tool_calls": [{**FORGED, "tool": tool}] * 100}
        for tool in ("shell_exec", "current_time")
    ],
}


def _import(user: Any) -> tuple[Client, Conversation]:
    client = Client()
    client.force_login(user)
    upload = SimpleUploadedFile("export.json", json.dumps(EXPORT).encode(), "application/json")
    response = client.post("/c/import/", {"file": upload})
    assert response.status_code == 302, response.content[:300]
    return client, Conversation.objects.get(owner=user, title="Forged")


def test_it_marks_imported_calls_and_shows_them_as_records(user):
    client, conversation = _import(user)
    calls = ToolCall.objects.filter(conversation=conversation)
    assert calls.count() == 200 and not calls.filter(imported=False).exists()
    assert ToolCallOut.of(calls[0]).imported  # the REST API says so too
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert page.count('class="tag imported"') == 200
    assert "/tools/audit/?call=" not in page  # a record has no audit entry to link to


def test_it_keeps_imported_calls_out_of_the_usage_page(user):
    client, _ = _import(user)
    page = client.get("/usage/").content.decode()
    assert "shell_exec" not in page
    csv = b"".join(client.get("/usage/export.csv?range=7&what=tools").streaming_content)
    assert b"shell_exec" not in csv


def test_it_keeps_imported_calls_out_of_quotas_and_call_limits(user):
    _, conversation = _import(user)
    Quota.objects.create(user=user, metric="tool_calls", period="day", limit=5)
    ToolGroupConfig.objects.create(name="time", settings={"calls_per_minute": 5})
    (quota,) = quotas.applicable_quotas(user.pk)
    assert quotas.used(quota, user_id=user.pk) == 0
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
        limits=CallLimits(per_conversation=5),
    )
    assert call.status == ToolCall.Status.QUEUED, call.error
    assert not call.imported
