"""Full-text search over a person's conversations: titles, messages and tool calls (the
tool's name, its arguments, its result, output and error), with highlighted snippets.

As memory does (platform_app.memory.fulltext), in the database's own engine:

- SQLite: one FTS5 table (``porter unicode61``) holding a copy of each searchable text,
  kept in step by triggers on the three tables; a row's id says what it is
  (``id * 4 + kind``), so a change replaces exactly its row. A tool call is indexed once,
  when it ends (a call refused at binding ends as it is made; not on each heartbeat of a
  running call, and not when it is bound: binding is the hot path, and indexing there cost
  a fifth of the database pages each bind writes — bench/HISTORY.md), its JSON arguments and
  result as their keys and values (``json_tree``). Ranked by ``bm25``.
- PostgreSQL: GIN indexes on ``to_tsvector('english', …)`` expressions of the three
  tables (nothing to keep in step: the index is the database's; the tool calls' is partial,
  ended calls only, as on SQLite); ranked by ``ts_rank_cd``, snippets by ``ts_headline``.

The query is a set of words that must all match, the last one as a prefix (results follow
the typing); words are quoted (FTS5) or reduced to letters and digits (PostgreSQL), so
nothing in a query is read as search syntax. Results are the owner's conversations only.
"""

# ruff: noqa: S608 - every SQL text below is built from the constant names of this module;
# every value is a query parameter.
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from chat_app.services.titles import DEFAULT_TITLE

# The SQL below is built from these constant names only; every value is a parameter.
FTS = "chat_search_fts"
CONVERSATION = "chat_app_conversation"
MESSAGE = "chat_app_message"
TOOLCALL = "tools_app_toolcall"
KIND_TITLE, KIND_MESSAGE, KIND_TOOLCALL = 0, 1, 2
KINDS = {KIND_TITLE: "title", KIND_MESSAGE: "message", KIND_TOOLCALL: "tool call"}
MAX_TERMS = 12
MAX_TEXT = 100_000  # characters of one text that are indexed
TERMINAL = "('succeeded', 'failed', 'denied', 'cancelled')"
START, STOP = "\x02", "\x03"  # snippet markers: control characters, never in escaped HTML

_WORD = re.compile(r"\w+", re.UNICODE)


def _json_words(column: str) -> str:
    """The keys and values of a JSON column as text (decoded, without JSON's punctuation)."""
    return (
        f"CASE WHEN json_valid({column}) THEN (SELECT group_concat(coalesce(key, '') || ' ' || "
        f"coalesce(value, ''), ' ') FROM json_tree({column}) WHERE type NOT IN "
        f"('object', 'array')) ELSE coalesce({column}, '') END"
    )


SQLITE_CALL_TEXT = (
    "substr(new.tool || char(10) || coalesce(new.raw_arguments, '') || char(10) || "
    f"coalesce({_json_words('new.arguments')}, '') || char(10) || "
    f"coalesce({_json_words('new.result')}, '') || char(10) || "
    f"coalesce(new.output, '') || char(10) || coalesce(new.error, ''), 1, {MAX_TEXT})"
)
_SQLITE_INSTALL = [
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS} USING fts5("
    "body, conversation_id UNINDEXED, tokenize='porter unicode61')",
    # Titles (the default one is not worth finding).
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_conv_ai AFTER INSERT ON {CONVERSATION} "
    f"WHEN new.title <> '{DEFAULT_TITLE}' BEGIN "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) VALUES (new.id * 4, new.title, new.id); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_conv_au AFTER UPDATE OF title ON {CONVERSATION} "
    f"WHEN new.title IS NOT old.title BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4; "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) SELECT new.id * 4, new.title, new.id "
    f"WHERE new.title <> '{DEFAULT_TITLE}'; END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_conv_ad AFTER DELETE ON {CONVERSATION} BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4; END",
    # Messages: written once when complete (a streaming reply is saved when it ends).
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_msg_ai AFTER INSERT ON {MESSAGE} "
    f"WHEN new.content <> '' BEGIN "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) "
    f"VALUES (new.id * 4 + 1, substr(new.content, 1, {MAX_TEXT}), new.conversation_id); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_msg_au AFTER UPDATE OF content ON {MESSAGE} "
    f"WHEN new.content IS NOT old.content BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4 + 1; "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) SELECT new.id * 4 + 1, "
    f"substr(new.content, 1, {MAX_TEXT}), new.conversation_id WHERE new.content <> ''; END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_msg_ad AFTER DELETE ON {MESSAGE} BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4 + 1; END",
    # Tool calls of a conversation: when they end (made ended, or updated to an end).
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_call_ended_ai AFTER INSERT ON {TOOLCALL} "
    f"WHEN new.conversation_id IS NOT NULL AND new.status IN {TERMINAL} BEGIN "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) "
    f"VALUES (new.id * 4 + 2, {SQLITE_CALL_TEXT}, new.conversation_id); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_call_au AFTER UPDATE ON {TOOLCALL} "
    f"WHEN new.conversation_id IS NOT NULL AND new.status IN {TERMINAL} "
    f"AND (old.status NOT IN {TERMINAL} OR new.result IS NOT old.result) BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4 + 2; "
    f"INSERT INTO {FTS}(rowid, body, conversation_id) "
    f"VALUES (new.id * 4 + 2, {SQLITE_CALL_TEXT}, new.conversation_id); END",
    f"CREATE TRIGGER IF NOT EXISTS {FTS}_call_ad AFTER DELETE ON {TOOLCALL} BEGIN "
    f"DELETE FROM {FTS} WHERE rowid = old.id * 4 + 2; END",
]
_SQLITE_BACKFILL = [
    f"DELETE FROM {FTS}",
    f"INSERT INTO {FTS}(rowid, body, conversation_id) SELECT id * 4, title, id "
    f"FROM {CONVERSATION} WHERE title <> '{DEFAULT_TITLE}'",
    f"INSERT INTO {FTS}(rowid, body, conversation_id) "
    f"SELECT id * 4 + 1, substr(content, 1, {MAX_TEXT}), conversation_id FROM {MESSAGE} "
    "WHERE content <> ''",
    f"INSERT INTO {FTS}(rowid, body, conversation_id) "
    f"SELECT new.id * 4 + 2, {SQLITE_CALL_TEXT}, new.conversation_id FROM {TOOLCALL} new "
    f"WHERE new.conversation_id IS NOT NULL AND new.status IN {TERMINAL}",
]
_SQLITE_REMOVE = [
    *(
        f"DROP TRIGGER IF EXISTS {FTS}_{name}"
        for name in ("conv_ai", "conv_au", "conv_ad", "msg_ai", "msg_au", "msg_ad")
    ),
    *(
        f"DROP TRIGGER IF EXISTS {FTS}_{name}"
        for name in ("call_ai", "call_ended_ai", "call_au", "call_ad")
    ),
    f"DROP TABLE IF EXISTS {FTS}",
]

# PostgreSQL: the documents, as index expressions (the queries repeat them exactly).
PG_TITLE = "to_tsvector('english', c.title)"
PG_MESSAGE_TEXT = f"left(m.content, {MAX_TEXT})"
PG_CALL_TEXT = (
    "left(t.tool || ' ' || t.raw_arguments || ' ' || coalesce(t.arguments::text, '') || ' ' || "
    f"coalesce(t.result::text, '') || ' ' || t.output || ' ' || t.error, {MAX_TEXT})"
)
PG_CALL_ENDED = f"t.status IN {TERMINAL}"
_PG_INDEXES = {  # name: (table, alias, document, partial index condition)
    f"{FTS}_conv": (CONVERSATION, "c", "c.title", ""),
    f"{FTS}_msg": (MESSAGE, "m", PG_MESSAGE_TEXT, ""),
    f"{FTS}_call_ended": (TOOLCALL, "t", PG_CALL_TEXT, PG_CALL_ENDED),
}


def _pg_install() -> list[str]:
    out = []
    for name, (table, alias, text, condition) in _PG_INDEXES.items():
        expression = text.replace(f"{alias}.", "")
        where = f" WHERE {condition.replace(f'{alias}.', '')}" if condition else ""
        out.append(
            f"CREATE INDEX IF NOT EXISTS {name} ON {table} "
            f"USING gin (to_tsvector('english', {expression})){where}"
        )
    return out


def _execute(conn: BaseDatabaseWrapper, statements: list[str]) -> None:
    with conn.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


def install(conn: BaseDatabaseWrapper, *, backfill: bool = True) -> None:
    """Create the index (idempotent; the migration calls it, and so does every ``migrate``,
    because SQLite drops a table's triggers when a migration rebuilds the table)."""
    if conn.vendor == "sqlite":
        statements = _SQLITE_INSTALL + (_SQLITE_BACKFILL if backfill else [])
    elif conn.vendor == "postgresql":
        statements = _pg_install()
    else:  # pragma: no cover - only SQLite and PostgreSQL are supported
        return
    _execute(conn, statements)


def calls_indexed_when_ended(conn: BaseDatabaseWrapper) -> None:
    """From indexing each tool call when it is bound and again when it ends, to indexing it
    once, when it ends (migration chat_app 0023): the old trigger or index goes, the new one
    comes, and calls still under way leave the index until they end."""
    if conn.vendor == "sqlite":
        statements = [
            f"DROP TRIGGER IF EXISTS {FTS}_call_ai",
            *_SQLITE_INSTALL,
            f"DELETE FROM {FTS} WHERE rowid IN (SELECT id * 4 + 2 FROM {TOOLCALL} "
            f"WHERE status NOT IN {TERMINAL})",
        ]
    elif conn.vendor == "postgresql":
        statements = [f"DROP INDEX IF EXISTS {FTS}_call", *_pg_install()]
    else:  # pragma: no cover
        return
    _execute(conn, statements)


def remove(conn: BaseDatabaseWrapper) -> None:
    if conn.vendor == "sqlite":
        statements = _SQLITE_REMOVE
    elif conn.vendor == "postgresql":
        statements = [f"DROP INDEX IF EXISTS {name}" for name in (*_PG_INDEXES, f"{FTS}_call")]
    else:  # pragma: no cover
        return
    _execute(conn, statements)


def terms(query: str) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in seen:
            seen.append(word)
    return seen[:MAX_TERMS]


def fts5_query(words: list[str]) -> str:
    """``"a" "b"*``: every word must match, each quoted; the last one is a prefix."""
    quoted = ['"' + w.replace('"', '""') + '"' for w in words]
    quoted[-1] += "*"
    return " ".join(quoted)


def pg_query(words: list[str]) -> str:
    """``a & b:*`` for ``to_tsquery``: ``\\w+`` words carry no tsquery syntax; an
    underscore (which the parser splits at) is a space."""
    parts = [w.replace("_", " ").strip() for w in words]
    parts = [" & ".join(p.split()) for p in parts if p.strip()]
    if not parts:
        return ""
    return " & ".join(parts) + ":*"


@dataclass
class Hit:
    conversation_id: int
    title: str
    kind: str
    ref_id: int
    snippet: SafeString
    archived: bool
    updated_at: datetime

    @property
    def anchor(self) -> str:
        if self.kind == "message":
            return f"#message-{self.ref_id}"
        if self.kind == "tool call":
            return f"#toolcall-{self.ref_id}"
        return ""


def snippet_html(text: str) -> SafeString:
    """The engine's snippet, HTML-escaped, its matches in ``<mark>``."""
    clean = escape(" ".join(text.split()))
    opened = 0
    out = []
    for piece in re.split(f"([{START}{STOP}])", clean):
        if piece == START:
            if not opened:
                out.append("<mark>")
            opened += 1
        elif piece == STOP:
            if opened == 1:
                out.append("</mark>")
            opened = max(0, opened - 1)
        else:
            out.append(piece)
    if opened:
        out.append("</mark>")
    return mark_safe("".join(out))  # noqa: S308 - escaped above; only <mark> added


def _sqlite_search(owner_id: int, words: list[str], limit: int) -> list[tuple[int, int, str]]:
    """One statement: FTS5 ranks (``ORDER BY rank``) with the conversation joined for its
    owner, and makes snippets for the rows returned only. (Measured on 100,000 messages:
    snippets from a second query with ``rowid IN (…)`` made the search 10× slower; the
    owner as a column of the index that the query must match, 4× slower.)"""
    sql = (
        f"SELECT f.rowid, f.conversation_id, snippet({FTS}, 0, %s, %s, '…', 16) FROM {FTS} f "
        f"JOIN {CONVERSATION} c ON c.id = f.conversation_id "
        f"WHERE {FTS} MATCH %s AND c.owner_id = %s ORDER BY f.rank LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [START, STOP, fts5_query(words), owner_id, limit])
        return [(int(r[0]), int(r[1]), r[2] or "") for r in cursor.fetchall()]


def _pg_search(owner_id: int, words: list[str], limit: int) -> list[tuple[int, int, str]]:
    text = pg_query(words)
    if not text:
        return []
    options = f"StartSel={START}, StopSel={STOP}, MaxWords=24, MinWords=8, MaxFragments=1"
    message_doc = f"to_tsvector('english', {PG_MESSAGE_TEXT})"
    call_doc = f"to_tsvector('english', {PG_CALL_TEXT})"
    # The query is written out in each branch (not joined from a CTE) so that the planner
    # sees a constant tsquery and uses the GIN indexes.
    q = "to_tsquery('english', %s)"
    sql = (
        "WITH hits AS ("
        f"SELECT c.id * 4 AS rowid, c.id AS cid, ts_rank_cd({PG_TITLE}, {q}) * 2 AS score "
        f"FROM {CONVERSATION} c WHERE c.owner_id = %s AND {PG_TITLE} @@ {q} "
        "AND c.title <> %s "
        f"UNION ALL SELECT m.id * 4 + 1, m.conversation_id, ts_rank_cd({message_doc}, {q}) "
        f"FROM {MESSAGE} m JOIN {CONVERSATION} c ON c.id = m.conversation_id "
        f"WHERE c.owner_id = %s AND {message_doc} @@ {q} "
        f"UNION ALL SELECT t.id * 4 + 2, t.conversation_id, ts_rank_cd({call_doc}, {q}) "
        f"FROM {TOOLCALL} t JOIN {CONVERSATION} c ON c.id = t.conversation_id "
        f"WHERE c.owner_id = %s AND {PG_CALL_ENDED} AND {call_doc} @@ {q} "
        "ORDER BY 3 DESC, 1 DESC LIMIT %s) "
        "SELECT h.rowid, h.cid, ts_headline('english', CASE h.rowid %% 4 "
        f"WHEN 0 THEN (SELECT c.title FROM {CONVERSATION} c WHERE c.id = h.rowid / 4) "
        f"WHEN 1 THEN (SELECT {PG_MESSAGE_TEXT} FROM {MESSAGE} m WHERE m.id = h.rowid / 4) "
        f"ELSE (SELECT {PG_CALL_TEXT} FROM {TOOLCALL} t WHERE t.id = h.rowid / 4) END, "
        f"{q}, %s) FROM hits h ORDER BY h.score DESC, h.rowid DESC"
    )
    params: list[Any] = [
        *(text, owner_id, text, DEFAULT_TITLE),
        *(text, owner_id, text),
        *(text, owner_id, text),
        *(limit, text, options),
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [(int(r[0]), int(r[1]), r[2] or "") for r in cursor.fetchall()]


def conversations_search(*, owner_id: int, query: str, limit: int = 30) -> list[Hit]:
    """The owner's titles, messages and tool calls matching every word of ``query``, best
    first, each with its snippet (HTML, escaped, matches marked)."""
    words = terms(query)
    if not words:
        return []
    if connection.vendor == "sqlite":
        rows = _sqlite_search(owner_id, words, limit)
    elif connection.vendor == "postgresql":
        rows = _pg_search(owner_id, words, limit)
    else:  # pragma: no cover
        raise NotImplementedError(f"no full-text search for {connection.vendor}")
    from chat_app.models import Conversation

    conversations = {
        c.pk: c
        for c in Conversation.objects.filter(
            owner_id=owner_id, pk__in={cid for _, cid, _ in rows}
        ).only("id", "title", "archived_at", "updated_at")
    }
    hits = []
    for rowid, cid, snippet in rows:
        conversation = conversations.get(cid)
        if conversation is None:  # never another person's
            continue
        hits.append(
            Hit(
                conversation_id=cid,
                title=conversation.title,
                kind=KINDS[rowid % 4],
                ref_id=rowid // 4,
                snippet=snippet_html(snippet),
                archived=conversation.archived_at is not None,
                updated_at=conversation.updated_at,
            )
        )
    return hits
