"""Statements compiled once per process (infra/prepared.py, a measured gain): each call runs
what the ORM would have run, on both databases, and falls back to the ORM for values it was
not compiled for."""

from __future__ import annotations

import datetime as dt
import importlib
from typing import Any

import pytest
from django.db import connection
from django.db.models import F
from django.forms.models import model_to_dict
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from chat_app.models import Conversation, Message, Turn
from infra.prepared import REGISTRY, Prepared

pytestmark = [pytest.mark.modes, pytest.mark.django_db(transaction=True)]

TURN = Prepared(
    lambda pk: Turn.objects.select_related("conversation", "user").filter(pk=pk).order_by(),
    pk=int,
)
TREE = Prepared(
    lambda conversation_id: (
        Turn.objects.filter(conversation_id=conversation_id)
        .order_by("started_at", "id")
        .values_list("id", "parent_id", "started_at", "status")
    ),
    conversation_id=int,
)
TITLES = Prepared(
    lambda owner_id: (
        Conversation.objects.filter(owner_id=owner_id)
        .order_by("id")
        .values_list("title", flat=True)
    ),
    owner_id=int,
)
AS_DICTS = Prepared(
    lambda owner_id, title: (
        Conversation.objects.filter(owner_id=owner_id, title=title)
        .order_by("id")
        .values("id", "title", "updated_at")
    ),
    owner_id=int,
    title=str,
)
SOME_COLUMNS = Prepared(
    lambda conversation_id: (
        Message.objects.filter(conversation_id=conversation_id)
        .only("id", "content", "created_at")
        .order_by("id")
    ),
    conversation_id=int,
)
CLOSE = Prepared(
    lambda pk, content, state, usage, now: (
        Message.objects.filter(pk=pk, state=Message.State.STREAMING),
        {
            "content": content,
            "state": state,
            "version": F("version") + 1,
            "usage": usage,
            "created_at": now,
        },
    ),
    pk=int,
    content=str,
    state=str,
    usage=dict,
    now=dt.datetime,
)


def a_turn(conversation: Any, **extra: Any) -> Turn:
    return Turn.objects.create(conversation=conversation, user=conversation.owner, **extra)


def test_it_reads_the_instances_the_orm_reads_with_their_related_rows(conversation: Any) -> None:
    turn = a_turn(conversation, tool_scope=["current_time"], trace_context="00-ab")
    TURN.one(pk=turn.pk)  # compiled
    with CaptureQueriesContext(connection) as queries:
        got = TURN.one(pk=turn.pk)
        # select_related: the related rows came with it, no query more
        assert got.conversation.title == conversation.title
        assert got.user.username == conversation.owner.username
    assert len(queries) == 1
    orm = Turn.objects.select_related("conversation", "user").get(pk=turn.pk)
    assert model_to_dict(got) == model_to_dict(orm)
    assert model_to_dict(got.conversation) == model_to_dict(orm.conversation)
    assert got.started_at == orm.started_at and got.started_at.tzinfo is not None
    assert got._state.db == "default" and not got._state.adding
    assert TURN.one(pk=turn.pk + 1000) is None


def test_values_lists_flat_lists_dicts_and_deferred_columns_are_the_orms(
    conversation: Any,
) -> None:
    first = a_turn(conversation)
    a_turn(conversation, parent=first, status=Turn.Status.SUCCEEDED)
    orm = Turn.objects.filter(conversation_id=conversation.pk).order_by("started_at", "id")
    assert TREE.rows(conversation_id=conversation.pk) == list(
        orm.values_list("id", "parent_id", "started_at", "status")
    )
    Conversation.objects.create(owner=conversation.owner, title="second")
    owner = conversation.owner_id
    assert TITLES.rows(owner_id=owner) == [conversation.title, "second"]
    assert AS_DICTS.rows(owner_id=owner, title="second") == list(
        Conversation.objects.filter(owner_id=owner, title="second").values(
            "id", "title", "updated_at"
        )
    )
    Message.objects.create(conversation=conversation, role="user", content="hello ü")
    (message,) = SOME_COLUMNS.rows(conversation_id=conversation.pk)
    assert message.content == "hello ü"
    assert (
        message.get_deferred_fields()
        == Message.objects.only("id", "content", "created_at")
        .get(pk=message.pk)
        .get_deferred_fields()
    )


def test_an_update_changes_what_the_orms_update_changes(conversation: Any) -> None:
    now = timezone.now()
    streaming = [
        Message.objects.create(
            conversation=conversation, role="assistant", state=Message.State.STREAMING
        )
        for _ in range(2)
    ]
    usage = {"input_tokens": 3, "ü": [1, None, 2.5]}
    changed = CLOSE.update(
        pk=streaming[0].pk, content="done", state=Message.State.COMPLETE, usage=usage, now=now
    )
    Message.objects.filter(pk=streaming[1].pk, state=Message.State.STREAMING).update(
        content="done",
        state=Message.State.COMPLETE,
        version=F("version") + 1,
        usage=usage,
        created_at=now,
    )
    assert changed == 1
    ours, theirs = (Message.objects.get(pk=m.pk) for m in streaming)
    assert {**model_to_dict(ours), "id": 0} == {**model_to_dict(theirs), "id": 0}
    assert (ours.version, ours.usage, ours.created_at) == (1, usage, now)
    # no longer streaming: the condition holds, nothing changes
    assert CLOSE.update(pk=ours.pk, content="x", state="error", usage={}, now=now) == 0


def test_values_it_was_not_compiled_for_run_through_the_orm(conversation: Any) -> None:
    turn = a_turn(conversation)
    TURN.one(pk=turn.pk)
    assert TURN.one(pk=str(turn.pk)).pk == turn.pk  # a str where an int was declared
    # An id out of every integer column's range: the ORM's answer (none), not the database's
    # refusal of the parameter
    assert TURN.one(pk=2**80) is None
    assert TURN.one(pk=2**31) is None
    # None: the ORM writes IS NULL for it, another statement than the one compiled
    owner = conversation.owner_id
    AS_DICTS.rows(owner_id=owner, title="x")
    with CaptureQueriesContext(connection) as queries:
        assert AS_DICTS.rows(owner_id=owner, title=None) == []
    assert "IS NULL" in queries[-1]["sql"]


def test_with_verification_a_build_whose_sql_depends_on_its_values_fails(
    conversation: Any, settings: Any
) -> None:
    settings.PREPARED_VERIFY = True
    shifty = Prepared(
        lambda pk: Turn.objects.filter(pk=pk) if pk > 1000 else Turn.objects.filter(id__gte=pk),
        pk=int,
    )
    with pytest.raises(AssertionError, match="prepared SQL differs"):
        shifty.rows(pk=5)


@pytest.mark.parametrize(
    "build, kinds",
    [
        (lambda t: Conversation.objects.filter(title__contains=t), {"t": str}),
        (lambda t: Conversation.objects.filter(id__in=[t, t + 1]), {"t": int}),
        (lambda when: Turn.objects.filter(started_at__gte=when), {"when": dt.datetime}),
        (lambda t: Conversation.objects.prefetch_related("turns").filter(pk=t), {"t": int}),
        (
            lambda pk, text: (Message.objects.filter(pk=pk), {"content": text[:3]}),
            {"pk": int, "text": str},
        ),
        (lambda pk: Conversation.objects.filter(pk=pk).aggregate, {"pk": int}),
    ],
    ids=["contains", "in", "compared-datetime", "prefetch", "changed-value", "not-a-query"],
)
def test_statements_it_cannot_keep_are_refused_when_compiled(
    conversation: Any, build: Any, kinds: dict[str, type]
) -> None:
    statement = Prepared(build, **kinds)
    REGISTRY.remove(statement)
    with pytest.raises(TypeError):
        statement.check()


# The modules whose statements are compiled once (a new one is added here).
MODULES = (
    "chat_app.turn_tree",
    "chat_app.selectors",
    "chat_app.services.agents",
    "chat_app.services.prompts",
    "chat_app.services.turns",
    "chat_app.services.loop",
    "chat_app.services.history",
    "chat_app.services.tool_offer",
    "platform_app.memory.services",
    "platform_app.preferences.services",
    "platform_app.schedules",
    "tools_app.services.grants",
    "tools_app.services.approval",
    "tools_app.services.binding",
    "infra.sessions",
)


def test_every_statement_of_the_project_compiles_to_the_orms_sql() -> None:
    for name in MODULES:
        importlib.import_module(name)
    ours = [p for p in REGISTRY if not p.build.__module__.startswith("tests.")]
    assert {p.build.__module__ for p in ours} == set(MODULES)
    for statement in ours:
        statement.check()


def test_the_chat_pages_picker_menu_and_schedules_read_what_the_orm_reads(
    conversation: Any, django_user_model: Any
) -> None:
    from django.contrib.auth.models import Group

    from chat_app.models import Agent, Prompt
    from chat_app.services.agents import agent_choices, agents_for
    from chat_app.services.prompts import prompts_for, slash_menu
    from platform_app.models import Schedule
    from platform_app.schedules import schedules_for, schedules_listed

    me = conversation.owner
    other = django_user_model.objects.create_user("other-member")
    admin = django_user_model.objects.create_user("an-admin", is_staff=True)
    team = Group.objects.create(name="team")
    me.groups.add(team)
    other.groups.add(team)
    given = Agent.objects.create(name="given to the team")
    given.groups.add(team)
    Agent.objects.create(name="nobody's").groups.clear()  # new profiles go to Everyone
    Agent.objects.create(name="mine", owner=me)
    shared = Agent.objects.create(name="shared with me", owner=other)
    shared.groups.add(team)
    Agent.objects.create(name="kept", owner=other).groups.clear()

    def picked(agents: list[Agent]) -> list[tuple[int, str | None]]:
        return [(a.pk, a.owner.username if a.owner else None) for a in agents]

    for person in (me, other, admin):
        agent_choices(person)  # compiled
        with CaptureQueriesContext(connection) as queries:
            got = picked(agent_choices(person))  # the owners came with them
        assert len(queries) == 1
        assert got == picked(list(agents_for(person).select_related("owner")))
    assert {
        name for (name,) in Agent.objects.filter(pk__in=[p for p, _ in got]).values_list("name")
    } == set(Agent.objects.values_list("name", flat=True))  # staff: every profile
    assert {a.name for a in agent_choices(me)} == {"given to the team", "mine", "shared with me"}

    Prompt.objects.create(owner=me, title="b mine", body="x")
    theirs = Prompt.objects.create(owner=other, title="a theirs", body="y")
    theirs.groups.add(team)
    Prompt.objects.create(owner=other, title="c private", body="z")
    menu = slash_menu(me)["prompts"]
    assert [p["title"] for p in menu] == [p.title for p in prompts_for(me)[:200]]
    assert [p["owner"] for p in menu] == ["other-member", ""]

    Schedule.objects.create(user=me, name="daily", cron="0 9 * * *", message="hello")
    listed = schedules_listed(me.pk)
    orm = list(schedules_for(me.pk))
    assert [model_to_dict(s) for s in listed] == [model_to_dict(s) for s in orm]
    with CaptureQueriesContext(connection) as queries:
        assert listed[0].inject_into is None and listed[0].last_turn is None
    assert len(queries) == 0
    assert schedules_listed(other.pk) == []

    from chat_app.selectors import has_api_conversations

    assert not has_api_conversations(me)
    Conversation.objects.create(owner=me, title="over /v1", source=Conversation.Source.API)
    assert has_api_conversations(me) and not has_api_conversations(other)


def test_the_session_store_loads_what_djangos_store_loads(django_user_model: Any) -> None:
    """``infra.sessions`` reads the row through a prepared statement and compares the expiry
    in Python: a live session loads the same data as Django's own store; an expired, unknown
    or deleted one loads nothing and forgets its key, as Django's does."""
    import datetime as dt

    from django.contrib.sessions.backends.db import SessionStore as DjangoStore
    from django.contrib.sessions.models import Session
    from django.utils import timezone

    from infra.sessions import SessionStore

    made = DjangoStore()
    made["_auth_user_id"] = "7"
    made["note"] = "hello"
    made.create()
    key = made.session_key
    ours, django = SessionStore(key), DjangoStore(key)
    assert ours.load() == django.load() == {"_auth_user_id": "7", "note": "hello"}
    assert ours.session_key == key

    Session.objects.filter(pk=key).update(expire_date=timezone.now() - dt.timedelta(seconds=1))
    for store in (SessionStore(key), DjangoStore(key)):
        assert store.load() == {}
        assert store.session_key is None

    for missing in ("no-such-session-key-0000000000", "x' OR '1'='1"):
        for store in (SessionStore(missing), DjangoStore(missing)):
            assert store.load() == {}
            assert store.session_key is None


def test_a_conversations_bump_moves_it_up_and_skips_nothing(conversation: Any) -> None:
    """Every message after a conversation's first bumps it with one prepared ``UPDATE``
    (``chat_app.services.turns.conversation_touch``), which runs no ``save()`` override and
    fires no signal: this fails once Conversation has either, so the bump must be a save."""
    from django.db import models
    from django.db.models.signals import post_save, pre_save

    from chat_app.models import Conversation
    from chat_app.services.turns import conversation_touch

    assert Conversation.save is models.Model.save
    assert not pre_save.has_listeners(Conversation)
    assert not post_save.has_listeners(Conversation)

    conversation.title = "named already"
    conversation.save()
    before = Conversation.objects.get(pk=conversation.pk).updated_at
    assert conversation_touch(conversation, first_text="a later message") is False
    stored = Conversation.objects.get(pk=conversation.pk)
    assert stored.updated_at == conversation.updated_at > before
    assert stored.title == "named already"


def test_a_deleted_conversations_bump_fails_as_its_save_did(conversation: Any) -> None:
    from django.db import DatabaseError

    from chat_app.models import Conversation
    from chat_app.services.turns import conversation_touch

    conversation.title = "named already"
    conversation.save()
    Conversation.objects.filter(pk=conversation.pk).delete()
    with pytest.raises(DatabaseError, match="did not affect any rows"):
        conversation_touch(conversation, first_text="a later message")


def test_the_limits_count_reads_what_the_aggregate_read(conversation: Any) -> None:
    """The calls that count toward a conversation's and a turn's limits: allowed, not
    imported, in this conversation (and this turn); none yet is zero."""
    from django.db.models import Count, Q

    from chat_app.models import Conversation, Turn
    from tools_app.models import ToolCall
    from tools_app.services.binding import _RAN_IN_CONVERSATION

    this, other = (Turn.objects.create(conversation=conversation) for _ in range(2))
    elsewhere = Conversation.objects.create(owner=conversation.owner, title="elsewhere")

    def counts() -> tuple[Any, dict[str, Any]]:
        row = _RAN_IN_CONVERSATION.one(conversation_id=conversation.pk, turn_id=this.pk)
        orm = ToolCall.objects.filter(
            policy_verdict="allowed", imported=False, conversation_id=conversation.pk
        ).aggregate(turn=Count("pk", filter=Q(turn_id=this.pk)), conversation=Count("pk"))
        return row, orm

    assert counts() == (None, {"turn": 0, "conversation": 0})
    for turn, verdict, imported in (
        (this, "allowed", False),
        (this, "allowed", False),
        (other, "allowed", False),
        (this, "denied", False),
        (this, "allowed", True),
        (None, "allowed", False),
    ):
        ToolCall.objects.create(
            conversation=conversation,
            turn=turn,
            tool="current_time",
            policy_verdict=verdict,
            imported=imported,
        )
    ToolCall.objects.create(conversation=elsewhere, tool="current_time", policy_verdict="allowed")
    row, orm = counts()
    assert orm == {"turn": 2, "conversation": 4}
    assert {"turn": row["turn"], "conversation": row["conversation"]} == orm
