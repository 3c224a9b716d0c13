"""The claim and the end of a call are written out (tools_app/services/call_statements.py, for
a measured gain): they must do exactly what the ORM would, on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from tools_app.models import ToolCall
from tools_app.services.call_statements import call_claim, call_end

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]


def queued(conversation: Any, **extra: Any) -> ToolCall:
    return ToolCall.objects.create(
        conversation=conversation,
        user=conversation.owner,
        tool="current_time",
        group="time",
        arguments={"timezone": "Europe/Berlin", "nested": {"ü": [1, 2.5, None]}},
        scope=["current_time"],
        status=ToolCall.Status.QUEUED,
        **extra,
    )


def test_the_claimed_row_is_the_row_the_orm_reads(conversation: Any) -> None:
    call = queued(conversation)
    now = timezone.now()
    claimed = call_claim(call.pk, worker="w:1", now=now)
    assert claimed is not None
    stored = ToolCall.objects.get(pk=call.pk)
    assert model_to_dict(claimed) == model_to_dict(stored)
    assert (claimed.status, claimed.worker, claimed.version) == ("running", "w:1", 1)
    assert claimed.started_at == now == claimed.heartbeat_at
    assert claimed.cc_username == conversation.owner.username  # type: ignore[attr-defined]
    assert claimed.cc_title == conversation.title  # type: ignore[attr-defined]


def test_a_call_is_claimed_only_while_queued(conversation: Any) -> None:
    call = queued(conversation)
    assert call_claim(call.pk, worker="w:1", now=timezone.now()) is not None
    assert call_claim(call.pk, worker="w:2", now=timezone.now()) is None
    assert ToolCall.objects.get(pk=call.pk).worker == "w:1"
    assert call_claim(10**9, worker="w:1", now=timezone.now()) is None


def test_a_call_without_user_or_conversation_claims_with_blanks(user: Any) -> None:
    call = ToolCall.objects.create(tool="current_time", status=ToolCall.Status.QUEUED)
    claimed = call_claim(call.pk, worker="w", now=timezone.now())
    assert claimed is not None
    assert (claimed.cc_username, claimed.cc_title) == (None, None)  # type: ignore[attr-defined]


def test_the_end_stores_what_the_orm_would(conversation: Any) -> None:
    call = call_claim(queued(conversation).pk, worker="w", now=timezone.now())
    assert call is not None
    ended = timezone.now() + timedelta(seconds=1)
    fields = {
        "status": ToolCall.Status.SUCCEEDED,
        "result": {"success": True, "text": 'ü\u2028"quoted"', "n": 1.5, "none": None},
        "error": "",
        "finished_at": ended,
        "version": call.version + 1,
        "output": "line\n",
        "duration_ms": 12,
    }
    assert call_end(call, fields, allowed=(ToolCall.Status.RUNNING,))
    stored = ToolCall.objects.get(pk=call.pk)
    assert {name: getattr(stored, name) for name in fields} == fields


def test_the_end_is_refused_when_the_call_moved_on(conversation: Any) -> None:
    call = call_claim(queued(conversation).pk, worker="w", now=timezone.now())
    assert call is not None
    fields = {"status": ToolCall.Status.FAILED, "version": call.version + 1}
    assert not call_end(call, fields, allowed=(ToolCall.Status.QUEUED,))  # status not allowed
    ToolCall.objects.filter(pk=call.pk).update(version=call.version + 5)  # changed elsewhere
    assert not call_end(call, fields, allowed=(ToolCall.Status.RUNNING,))
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.RUNNING
