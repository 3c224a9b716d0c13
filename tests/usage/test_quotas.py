"""Quotas: a group's budget (shared by its members) and a person's own, checked before every
model round and when every tool call is bound, whatever started the turn; an exhausted one
ends the turn with words that say whose budget and when it resets, and is audited."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone

from chat_app.models import Message, ModelPrice, Turn, UsageRecord, UsageRecordGroup
from chat_app.services.turns import turn_start
from platform_app.models import Quota
from tests.conftest import wait_turn
from tests.llm_server import Reply, Usage
from tools_app.models import AuditRecord, ToolCall

pytestmark = [pytest.mark.modes]

DAILY = "the support group's daily budget of 1,500 tokens is used up; it resets at 00:00 UTC"


@pytest.fixture
def support(user) -> Group:
    group = Group.objects.create(name="support")
    user.groups.add(group)
    return group


def run(conversation, user, text: str, **kwargs) -> Turn:
    return wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text, **kwargs).pk)


def notice(turn: Turn) -> str:
    return Message.objects.get(turn=turn, role=Message.Role.NOTICE).content


def test_an_exhausted_group_budget_ends_the_turn_mid_conversation_until_it_resets(
    worker, conversation, user, llm, provider, support
):
    Quota.objects.create(group=support, metric="tokens", period="day", limit=1500)
    llm.set_default(Reply(text="Sure.", usage=Usage(input=1000, output=100)))
    assert run(conversation, user, "one").status == Turn.Status.SUCCEEDED  # 1,100 used
    assert run(conversation, user, "two").status == Turn.Status.SUCCEEDED  # 2,200 used
    refused = run(conversation, user, "three")
    assert refused.status == Turn.Status.FAILED
    assert notice(refused) == f"⚠ {DAILY[:1].upper()}{DAILY[1:]}"
    assert len(llm.requests) == 2  # the model was not asked
    record = AuditRecord.objects.get(kind=AuditRecord.Kind.QUOTA)
    assert record.username == "alice" and record.conversation_id == conversation.pk
    assert record.detail["scope"] == "group support" and record.detail["used"] == "2200"
    assert record.detail["what"] == "model round" and record.source == "chat"

    # Midnight UTC: yesterday's rounds no longer count.
    yesterday = timezone.now() - timedelta(days=1)
    UsageRecord.objects.update(created_at=yesterday)
    UsageRecordGroup.objects.update(created_at=yesterday)
    assert run(conversation, user, "four").status == Turn.Status.SUCCEEDED


def test_a_cost_budget_names_its_dollars(worker, conversation, user, llm, provider, support):
    ModelPrice.objects.create(model="scripted-model", input_per_million=5000, output_per_million=0)
    Quota.objects.create(group=support, metric="cost", period="day", limit=5)
    llm.set_default(Reply(text="Costly.", usage=Usage(input=1000, output=10)))  # $5 a round
    assert run(conversation, user, "one").status == Turn.Status.SUCCEEDED
    refused = run(conversation, user, "two")
    assert notice(refused) == (
        "⚠ The support group's daily budget of $5 is used up; it resets at 00:00 UTC"
    )


def test_a_persons_own_quota_replaces_the_groups(
    worker, conversation, user, other_user, llm, provider, support
):
    from chat_app.models import Conversation

    other_user.groups.add(support)
    Quota.objects.create(group=support, metric="tokens", period="month", limit=1000)
    Quota.objects.create(user=user, metric="tokens", period="month", limit=None)  # no limit
    llm.set_default(Reply(text="Fine.", usage=Usage(input=1000, output=100)))
    assert run(conversation, user, "one").status == Turn.Status.SUCCEEDED
    assert run(conversation, user, "two").status == Turn.Status.SUCCEEDED  # exempt
    theirs = Conversation.objects.create(owner=other_user)
    refused = run(theirs, other_user, "mine")
    assert "The support group's monthly budget of 1,000 tokens is used up" in notice(refused)
    assert "it resets on 1 " in notice(refused)


@pytest.mark.parametrize("source", [Turn.Source.SCHEDULE, Turn.Source.API])
def test_turns_a_schedule_or_the_api_starts_count_and_are_refused_like_chat(
    worker, conversation, user, llm, provider, source
):
    Quota.objects.create(user=user, metric="tokens", period="day", limit=100)
    llm.set_default(Reply(text="Done.", usage=Usage(input=90, output=20)))
    assert run(conversation, user, "first", source=source).status == Turn.Status.SUCCEEDED
    assert UsageRecord.objects.get().source == source
    refused = run(conversation, user, "second", source=source)
    assert refused.status == Turn.Status.FAILED
    assert "Your daily budget of 100 tokens is used up" in notice(refused)
    assert AuditRecord.objects.get(kind=AuditRecord.Kind.QUOTA).source == source


def test_a_tool_call_limit_refuses_the_call_at_binding(
    worker, conversation, user, llm, provider, support
):
    Quota.objects.create(group=support, metric="tool_calls", period="day", limit=1)
    first = run(conversation, user, '/current_time {"timezone": "UTC"}')
    assert first.status == Turn.Status.SUCCEEDED
    second = run(conversation, user, '/current_time {"timezone": "UTC"}')
    call = ToolCall.objects.get(turn=second)
    assert call.status == ToolCall.Status.DENIED and call.policy_verdict == "quota"
    assert call.error == (
        "quota: the support group's daily limit of 1 tool calls is used up; it resets at 00:00 UTC"
    )
    audit = AuditRecord.objects.get(kind=AuditRecord.Kind.CALL, tool_call=call)
    assert audit.status == "denied" and audit.policy_verdict == "quota"


def test_a_quota_change_applies_to_the_next_round_at_once(
    worker, conversation, user, llm, provider, support
):
    llm.set_default(Reply(text="Yes.", usage=Usage(input=500, output=50)))
    assert run(conversation, user, "one").status == Turn.Status.SUCCEEDED
    quota = Quota.objects.create(group=support, metric="tokens", period="day", limit=500)
    assert run(conversation, user, "two").status == Turn.Status.FAILED
    quota.limit = Decimal(10_000)
    quota.save()
    assert run(conversation, user, "three").status == Turn.Status.SUCCEEDED
