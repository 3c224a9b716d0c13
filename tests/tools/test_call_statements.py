"""The claim and the end of a call are written out (tools_app/services/call_statements.py, for
a measured gain): they must do exactly what the ORM would, on both databases."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.forms.models import model_to_dict
from django.utils import timezone

from tools_app.models import AuditRecord, ToolCall
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


def test_the_token_is_the_one_the_orm_reads(db: None) -> None:
    from tools_app.models import ToolConfigVersion
    from tools_app.services.call_statements import config_token

    ToolConfigVersion.bump()
    assert config_token() == ToolConfigVersion.objects.get(pk=1).token


def test_the_claim_carries_the_configuration_token(conversation: Any) -> None:
    from tools_app.models import ToolConfigVersion

    ToolConfigVersion.bump()
    claimed = call_claim(queued(conversation).pk, worker="w", now=timezone.now())
    assert claimed is not None
    assert claimed.cc_config_token == ToolConfigVersion.objects.get(pk=1).token  # type: ignore[attr-defined]


def _indexes(model: Any) -> dict[str, tuple[str, ...]]:
    """A table's indexes by name: their columns, and "partial" where they have a condition."""
    from django.db import connection

    table = model._meta.db_table
    with connection.cursor() as cursor:
        found = connection.introspection.get_constraints(cursor, table)
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE tbl_name = %s", [table])
        else:
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table]
            )
        partial = {name for name, sql in cursor if sql and " WHERE " in sql.upper()}
    return {
        name: (*c["columns"], *(["partial"] if name in partial else []))
        for name, c in found.items()
        if c["index"] and not c["primary_key"]
    }


def test_a_bound_call_and_its_record_write_only_the_index_entries_they_are_looked_up_by(
    conversation: Any, django_user_model: Any
) -> None:
    """Binding is the hot path and each index entry is a page it writes. A call: the
    person's calls are found through ``toolcall_user_created``, the decider's through a
    partial index a call bound undecided is not in. Its audit record: the conversation's
    and the group's indexes cover reads and tool-less records only."""
    calls = _indexes(ToolCall).values()
    assert ("user_id",) not in calls and ("user_id", "created_at") in calls
    assert [c for c in calls if c[0] == "decided_by_id"] == [("decided_by_id", "partial")]
    records = _indexes(AuditRecord).values()
    assert [c for c in records if c[0] == "conversation_id"] == [("conversation_id", "partial")]
    assert [c for c in records if c[0] == "group"] == [("group", "partial")]
    # What they are looked up by still works.
    approver = django_user_model.objects.create_user("approver-gone")
    call = queued(conversation, decided_by=approver)
    approver.delete()
    call.refresh_from_db()
    assert call.decided_by_id is None and call.user_id == conversation.owner_id
    conversation.owner.delete()  # their conversation goes, and its calls with it
    assert not ToolCall.objects.filter(pk=call.pk).exists()


def test_the_index_migration_goes_back_and_forth() -> None:
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = {"calls": _indexes(ToolCall), "records": _indexes(AuditRecord)}
    executor = MigrationExecutor(connection)
    try:
        executor.migrate([("tools_app", "0016_research_sources")])
        calls, records = _indexes(ToolCall).values(), _indexes(AuditRecord).values()
        assert ("user_id",) in calls and ("decided_by_id",) in calls
        assert ("conversation_id",) in records and ("group",) in records
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert {"calls": _indexes(ToolCall), "records": _indexes(AuditRecord)} == before
