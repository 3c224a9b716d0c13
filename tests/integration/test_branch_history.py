"""The turn tree behind edit/regenerate, read without a worker: which messages the model and the
page get, and the migration that links the turns made before branches existed."""

from __future__ import annotations

import importlib

from django.apps import apps

from chat_app.models import Message, Turn
from chat_app.selectors import conversation_messages, turn_tree
from chat_app.services.history import build_history


def _turn(conversation, text: str, answer: str, *, branch_of: Turn | None = None) -> Turn:
    turn = Turn(conversation=conversation, status=Turn.Status.SUCCEEDED)
    if branch_of is not None:
        turn.branch_from(branch_of)
    turn.save()
    Message.objects.create(conversation=conversation, turn=turn, role="user", content=text)
    Message.objects.create(conversation=conversation, turn=turn, role="assistant", content=answer)
    return turn


def _said(conversation) -> list[str]:
    return [m.content for m in build_history(conversation, native=True)]


def test_the_model_and_the_page_see_the_shown_branch_only(conversation):
    a = _turn(conversation, "A", "ra")
    b = _turn(conversation, "B", "rb")
    assert b.parent_id == a.pk  # a turn made anyhow follows the head
    Message.objects.create(
        conversation=conversation, role="user", origin="subagent", content="sub says hi"
    )
    b2 = _turn(conversation, "B2", "rb2", branch_of=b)
    c = _turn(conversation, "C", "rc")
    assert (b2.parent_id, c.parent_id) == (a.pk, b2.pk)
    said = _said(conversation)
    assert "B" not in said and "rb" not in said
    assert said[:2] == ["A", "ra"] and said[-3:] == ["rb2", "C", "rc"]
    # A message of no turn belongs to every branch (merged with the next user message).
    assert "sub says hi" in said[-4] and said[-4].endswith("B2")
    shown = conversation_messages(conversation)
    branch = {m.content: m.branch for m in shown if m.role == "user" and m.turn_id}
    assert branch["B2"].index == 2 and branch["B2"].count == 2 and branch["B2"].previous == b.pk
    assert branch["A"] is None
    # A regenerated first turn: a second root.
    a2 = _turn(conversation, "A", "ra2", branch_of=a)
    assert a2.parent_id is None
    said = _said(conversation)
    assert said[-1] == "ra2" and not {"ra", "rb2", "C", "rc"} & set(said)
    tree = turn_tree(conversation.pk)
    assert tree.path == [a2.pk] and tree.branch_info(a2.pk).count == 2
    assert tree.latest_leaf(a.pk) == c.pk  # going back to A shows its last branch, to C


def test_the_migration_links_earlier_turns_in_order(conversation):
    first = _turn(conversation, "one", "1")
    second = _turn(conversation, "two", "2")
    third = _turn(conversation, "three", "3")
    Turn.objects.update(parent=None)  # as they were before the migration
    migration = importlib.import_module("chat_app.migrations.0014_message_branches")
    migration.link_turns(apps, None)
    parents = dict(Turn.objects.values_list("id", "parent_id"))
    assert parents == {first.pk: None, second.pk: first.pk, third.pk: second.pk}
    assert _said(conversation) == ["one", "1", "two", "2", "three", "3"]
