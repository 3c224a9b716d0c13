"""The statements every tool call runs, written out: its claim and its end on the worker, and
the read of the tool configuration's token that binding and the worker each make.

Everything else goes through the ORM (the chat's hot reads and updates compiled once per process
by it: ``infra/prepared.py``). The claim and the end stay SQL because of an
A/B in one ``make bench`` run (50 conversations at once, 2-core host, 2026-11-25):
with the ORM versions the tools worker's CPU per turn doubled (4.2–4.8 → 8.6–9.0 ms,
distributed) and embedded CPU per turn rose 12–15 %, beyond the run-to-run spread; alone, one
claim and finish took 0.5 ms of CPU written out and 2.2 ms through the ORM (SQLite), the ORM
building five statements where these are two; a turn reads the configuration token five
times, 0.04 ms each written out, 0.2 ms through the ORM.
The INSERTs of a bound call and of its audit record are the ORM's ``save()``: an INSERT cache
compiled once per model saved 0.1 ms a bind, which no end-to-end figure could see (issue 38,
``bench/HISTORY.md``), and it skipped ``save()`` overrides and signal receivers unseen.
``tests/tools/test_call_statements.py`` holds them to what the ORM would do: the same row,
the same refusals.

The claim and the end are plain parameterised statements on our table and column names (``_meta``),
valid on SQLite (3.35+) and PostgreSQL. Values go through each field's ``get_db_prep_save``,
rows come back through ``raw()``, so field conversions are Django's own.
"""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.db.models import Field

from tools_app.models import ToolCall, ToolConfigVersion


def _field(name: str) -> Field[Any, Any]:
    field = ToolCall._meta.get_field(name)
    assert isinstance(field, Field)
    return field


def _column(name: str) -> str:
    return str(connection.ops.quote_name(str(_field(name).column)))


def _table_of(name: str) -> tuple[str, str]:
    """The table and key column of the model ``ToolCall.<name>`` points to (another app's:
    named through the key, not imported)."""
    model = _field(name).related_model
    assert isinstance(model, type) and model._meta.pk is not None
    meta = model._meta
    return connection.ops.quote_name(meta.db_table), connection.ops.quote_name(str(meta.pk.column))


def config_token() -> str | None:
    """The tool configuration's token (``tools_app.selectors``): is a process's copy current?"""
    with connection.cursor() as cursor:
        cursor.execute(_token_sql())
        row = cursor.fetchone()
    return row[0] if row else None


def _token_sql() -> str:
    qn = connection.ops.quote_name
    table = qn(ToolConfigVersion._meta.db_table)
    return f"SELECT {qn('token')} FROM {table} WHERE {qn('id')} = 1"  # noqa: S608 - our own names


def call_claim(call_id: int, *, worker: str, now: Any) -> ToolCall | None:
    """``queued → running`` if the call is still queued (of two workers given the same call
    one wins), returning the claimed row with ``cc_username`` and ``cc_title`` (the names its
    audit record copies) and ``cc_config_token`` (the configuration it runs under), read with
    it."""
    qn = connection.ops.quote_name
    users, user_pk = _table_of("user")
    conversations, conversation_pk = _table_of("conversation")
    table, version = qn(ToolCall._meta.db_table), _column("version")
    sql = (  # our own table and column names; every value is a parameter
        f"UPDATE {table} SET {_column('status')} = %s, {_column('started_at')} = %s, "  # noqa: S608
        f"{_column('heartbeat_at')} = %s, {_column('worker')} = %s, {version} = {version} + 1 "
        f"WHERE {_column('id')} = %s AND {_column('status')} = %s "
        f"RETURNING *, (SELECT {qn('username')} FROM {users} "
        f"WHERE {user_pk} = {table}.{_column('user')}) AS cc_username, "
        f"(SELECT {qn('title')} FROM {conversations} "
        f"WHERE {conversation_pk} = {table}.{_column('conversation')}) AS cc_title, "
        f"({_token_sql()}) AS cc_config_token"
    )
    at = _prep("started_at", now)
    params = [ToolCall.Status.RUNNING.value, at, at, worker, call_id, ToolCall.Status.QUEUED.value]
    return next(iter(ToolCall.objects.raw(sql, params)), None)


def call_end(call: ToolCall, fields: dict[str, Any], *, allowed: tuple[str, ...]) -> bool:
    """Store ``fields`` if the call is still in one of ``allowed`` at the version this process
    claimed it at (nobody else changed it meanwhile); True when it was stored."""
    table = connection.ops.quote_name(ToolCall._meta.db_table)
    sets = ", ".join(f"{_column(name)} = %s" for name in fields)
    sql = (  # our own table and column names; every value is a parameter
        f"UPDATE {table} SET {sets} WHERE {_column('id')} = %s "  # noqa: S608
        f"AND {_column('status')} IN ({', '.join(['%s'] * len(allowed))}) "
        f"AND {_column('version')} = %s"
    )
    params = [_prep(name, value) for name, value in fields.items()]
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, call.pk, *allowed, call.version])
        return bool(cursor.rowcount)


def _prep(name: str, value: Any) -> Any:
    return _field(name).get_db_prep_save(value, connection)
