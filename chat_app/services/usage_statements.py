"""A round's usage record and its shares in the person's groups, in one statement on
PostgreSQL.

Everything else in the chat app goes through the ORM. This stays SQL because of what an A/B in
one run measured (``bench usage_record``, 2026-11-27, 1,000 rounds each way, interleaved):
through the ORM the record and its shares are two INSERTs, each its own round trip and
commit, and on PostgreSQL they added more than the 1 ms a round may spend on recording usage;
one data-modifying ``WITH`` writes both at once (figures in ``bench/HISTORY.md``). SQLite has
no ``INSERT`` inside ``WITH`` and no round trips to save: it keeps the ORM's two statements.
``tests/usage/test_usage_statements.py`` holds the statement to what the ORM writes.

The record's own ``INSERT`` is Django's, compiled once (``infra.compiled_insert``: each
field's defaults and conversions, our table and column names); only the shares' part is
written out, with every value a parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from django.db import connection

from chat_app.models import UsageRecord, UsageRecordGroup
from infra.compiled_insert import compiled_insert


def one_statement() -> bool:
    """Whether this database writes a record and its shares in one statement."""
    return connection.vendor == "postgresql"


def record_with_shares(
    record: UsageRecord, group_ids: Sequence[int], *, tokens: int, cost: Decimal
) -> None:
    """INSERT ``record`` (unsaved) and its share in each of ``group_ids`` (not empty) in one
    statement; sets the record's primary key."""
    assert group_ids, "a record without shares is one plain INSERT"
    insert = compiled_insert(UsageRecord)  # … RETURNING the record's key
    qn = connection.ops.quote_name
    shares = UsageRecordGroup._meta

    def column(name: str) -> str:
        return qn(str(shares.get_field(name).column))  # type: ignore[union-attr]

    assert UsageRecord._meta.pk is not None
    pk = qn(str(UsageRecord._meta.pk.column))
    sql = (  # our own table and column names; every value is a parameter
        f"WITH r AS ({insert.sql}) "  # noqa: S608
        f"INSERT INTO {qn(shares.db_table)} ({column('record')}, {column('group')}, "
        f"{column('created_at')}, {column('tokens')}, {column('cost')}) "
        f"SELECT r.{pk}, g.id, %s, %s, %s FROM r CROSS JOIN unnest(%s::bigint[]) AS g(id) "
        f"RETURNING {column('record')}"
    )
    created = shares.get_field("created_at").get_db_prep_save(  # type: ignore[union-attr]
        record.created_at, connection
    )
    params = insert.params(record)  # the record's created_at is set by now (its default)
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, created, tokens, cost, list(group_ids)])
        insert.stored(record, cursor.fetchone())
