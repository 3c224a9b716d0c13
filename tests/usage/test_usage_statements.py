"""A round's usage record and its group shares are one statement on PostgreSQL
(chat_app/services/usage_statements.py, for a measured gain) and two ORM INSERTs on SQLite:
both write exactly what the ORM would."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.forms.models import model_to_dict

from chat_app.models import UsageRecord, UsageRecordGroup
from chat_app.services.usage import RoundUsage, usage_record
from chat_app.services.usage_statements import one_statement
from tools_app.services.grants import everyone_group

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]


def record(conversation: Any, user: Any, **overrides: Any) -> UsageRecord:
    usage = RoundUsage(
        input_tokens=4200,
        output_tokens=180,
        cached_tokens=3000,
        estimated=False,
        cost=Decimal("0.004290"),
        priced=True,
    )
    options: dict[str, Any] = {
        "usage": usage,
        "turn_id": None,
        "conversation_id": conversation.pk,
        "user_id": user.pk,
        "username": user.username,
        "source": "chat",
        "provider": None,
        "model": "scripted-model",
        "agent": None,
        "first_token_ms": 120,
        "duration_ms": 900,
        "outcome": UsageRecord.Outcome.OK,
    }
    return usage_record(**{**options, **overrides})


def test_the_statement_is_the_one_of_this_database() -> None:
    assert one_statement() == (connection.vendor == "postgresql")


def test_a_record_and_its_shares_are_the_rows_the_orm_reads(conversation: Any, user: Any) -> None:
    support, dev = Group.objects.create(name="support"), Group.objects.create(name="dev")
    user.groups.add(support, dev)
    written = record(conversation, user)
    assert written.pk is not None and not written._state.adding
    stored = UsageRecord.objects.get(pk=written.pk)
    assert model_to_dict(written) == model_to_dict(stored)
    assert stored.created_at == written.created_at
    assert (stored.input_tokens, stored.cost) == (4200, Decimal("0.004290"))
    assert stored.username == "alice"
    shares = UsageRecordGroup.objects.filter(record=stored).order_by("group_id")
    assert [s.group_id for s in shares] == sorted([support.pk, dev.pk, everyone_group().pk])
    for share in shares:
        assert (share.tokens, share.cost, share.created_at) == (
            4380,
            Decimal("0.004290"),
            stored.created_at,
        )
    # The related manager sees them, as it would rows the ORM wrote.
    assert stored.shares.count() == 3


def test_a_record_of_nobody_has_no_shares(conversation: Any, user: Any) -> None:
    written = record(conversation, user, user_id=None, username="")
    assert UsageRecord.objects.filter(pk=written.pk, user=None).exists()
    assert not UsageRecordGroup.objects.filter(record_id=written.pk).exists()


def test_each_record_gets_its_own_key(conversation: Any, user: Any) -> None:
    first, second = record(conversation, user), record(conversation, user)
    assert first.pk != second.pk
    assert UsageRecordGroup.objects.filter(record_id=second.pk).count() == 1  # Everyone
