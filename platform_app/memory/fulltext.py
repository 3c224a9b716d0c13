"""Full-text search of memory chunks, in the database's own engine.

- SQLite: an FTS5 table with external content (``platform_memorychunk`` is the content) and
  the ``porter unicode61`` tokenizer, kept in step by triggers; ranked by ``bm25``.
- PostgreSQL: ``to_tsvector('english', content)`` with a GIN index on that expression; ranked
  by ``ts_rank_cd``.

Both read the query as a set of words, any of which may match (a person's question rarely
has every word of the stored fact); documents with more and rarer matching words rank first.
The words are quoted (FTS5) or normalised by ``plainto_tsquery`` (PostgreSQL), so nothing
in a query is taken as search syntax.
"""

from __future__ import annotations

import re

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper

# The SQL below is built from these two constant names only; every value is a parameter.

TABLE = "platform_memorychunk"
FTS = "platform_memorychunk_fts"
MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)

_SQLITE_INSTALL = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5("
    f"content, content='{TABLE}', content_rowid='id', tokenize='porter unicode61')",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_ai AFTER INSERT ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}(rowid, content) VALUES (new.id, new.content); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_ad AFTER DELETE ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.id, old.content); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_au AFTER UPDATE OF content ON {TABLE} BEGIN "  # noqa: S608
    f"INSERT INTO {FTS}({FTS}, rowid, content) VALUES ('delete', old.id, old.content); "
    f"INSERT INTO {FTS}(rowid, content) VALUES (new.id, new.content); END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",  # noqa: S608
]
_SQLITE_REMOVE = [
    f"DROP TRIGGER IF EXISTS {FTS}_ai",
    f"DROP TRIGGER IF EXISTS {FTS}_ad",
    f"DROP TRIGGER IF EXISTS {FTS}_au",
    f"DROP TABLE IF EXISTS {FTS}",
]
_PG_INSTALL = [
    f"CREATE INDEX IF NOT EXISTS {FTS} ON {TABLE} USING gin (to_tsvector('english', content))"
]
_PG_REMOVE = [f"DROP INDEX IF EXISTS {FTS}"]


def install(conn: BaseDatabaseWrapper) -> None:
    """Create the index for this database (migrations call it; idempotent)."""
    statements = _SQLITE_INSTALL if conn.vendor == "sqlite" else _PG_INSTALL
    if conn.vendor not in ("sqlite", "postgresql"):
        return
    with conn.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def remove(conn: BaseDatabaseWrapper) -> None:
    statements = _SQLITE_REMOVE if conn.vendor == "sqlite" else _PG_REMOVE
    if conn.vendor not in ("sqlite", "postgresql"):
        return
    with conn.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


# PostgreSQL's 'english' configuration drops these (Snowball's English stop words); FTS5
# has no stop words, so the SQLite query leaves them out itself: with OR semantics, "the"
# or "what" in a question would otherwise rank any chunk containing them.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()  # noqa: SIM905
)


def terms(query: str) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


def fts5_query(query: str) -> str:
    """``"word" OR "other"``: every word quoted, so FTS5 reads none of it as syntax; stop
    words left out unless the query has nothing else."""
    words = terms(query)
    words = [w for w in words if w not in STOP_WORDS] or words
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in words)


def search(*, user_id: int, query: str, limit: int) -> list[int]:
    """Ids of the user's chunks matching ``query``, best first."""
    if not terms(query):
        return []
    if connection.vendor == "sqlite":
        sql = (
            f"SELECT c.id FROM {FTS} JOIN {TABLE} c ON c.id = {FTS}.rowid "  # noqa: S608
            f"WHERE {FTS} MATCH %s AND c.user_id = %s "
            f"ORDER BY bm25({FTS}), c.id DESC LIMIT %s"
        )
        params: list[str | int] = [fts5_query(query), user_id, limit]
    elif connection.vendor == "postgresql":
        sql = (
            f"SELECT id FROM {TABLE}, "  # noqa: S608
            "(SELECT replace(plainto_tsquery('english', %s)::text, ' & ', ' | ')::tsquery AS q) w "
            "WHERE user_id = %s AND to_tsvector('english', content) @@ q "
            "ORDER BY ts_rank_cd(to_tsvector('english', content), q) DESC, id DESC LIMIT %s"
        )
        params = [" ".join(terms(query)), user_id, limit]
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise NotImplementedError(f"no full-text search for {connection.vendor}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]
