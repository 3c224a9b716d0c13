"""Hot-path INSERTs written out (infra/db/rows.py) store what ``save()`` stores."""

from __future__ import annotations

from typing import Any

import pytest
from django.forms.models import model_to_dict

from chat_app.models import Message, Turn
from infra.db import rows
from tools_app.models import ToolCall

pytestmark = pytest.mark.modes


def stored(instance: Any) -> dict[str, Any]:
    fresh = type(instance).objects.get(pk=instance.pk)
    values = model_to_dict(fresh, fields=[f.name for f in fresh._meta.concrete_fields])
    for name in ("id", "created_at", "updated_at", "heartbeat_at", "turn"):
        values.pop(name, None)
    return values


def test_an_insert_stores_what_save_stores(conversation: Any) -> None:
    def turn() -> Turn:
        return Turn(conversation=conversation, user_id=conversation.owner_id, model="m")

    saved, inserted = turn(), turn()
    saved.save()
    rows.insert(inserted)
    assert inserted.pk is not None and not inserted._state.adding
    assert stored(inserted) == stored(saved)
    assert Turn.objects.get(pk=inserted.pk).started_at is not None  # auto_now_add ran

    def message(t: Turn) -> Message:
        return Message(conversation=conversation, turn=t, role="user", content="héllo ✓")

    saved_message, inserted_message = message(saved), message(inserted)
    saved_message.save()
    rows.insert(inserted_message)
    assert stored(inserted_message) == stored(saved_message)

    def call() -> ToolCall:
        return ToolCall(
            conversation=conversation,
            user_id=conversation.owner_id,
            tool="current_time",
            arguments={"timezone": "UTC", "nested": [1, {"a": None}]},
            result={"success": True},
        )

    saved_call, inserted_call = call(), call()
    saved_call.save()
    rows.insert(inserted_call)
    assert stored(inserted_call) == stored(saved_call)


def test_insert_refuses_a_row_that_has_a_key(conversation: Any) -> None:
    with pytest.raises(ValueError, match="new rows"):
        rows.insert(conversation)
