"""Conversation search indexes a tool call once, when it ends (it indexed it when it was bound
and again when it ended). Backwards: the trigger and index as 0017 made them."""

from django.db import migrations


def forwards(apps, schema_editor):
    from chat_app.services import search

    search.calls_indexed_when_ended(schema_editor.connection)


def backwards(apps, schema_editor):
    from chat_app.services import search

    fts, table = search.FTS, search.TOOLCALL
    if schema_editor.connection.vendor == "sqlite":
        statements = [
            f"DROP TRIGGER IF EXISTS {fts}_call_ended_ai",
            f"CREATE TRIGGER IF NOT EXISTS {fts}_call_ai AFTER INSERT ON {table} "
            "WHEN new.conversation_id IS NOT NULL BEGIN "
            f"INSERT INTO {fts}(rowid, body, conversation_id) "
            f"VALUES (new.id * 4 + 2, {search.SQLITE_CALL_TEXT}, new.conversation_id); END",
            f"INSERT INTO {fts}(rowid, body, conversation_id) "
            f"SELECT new.id * 4 + 2, {search.SQLITE_CALL_TEXT}, new.conversation_id "
            f"FROM {table} new WHERE new.conversation_id IS NOT NULL "
            f"AND new.status NOT IN {search.TERMINAL}",
        ]
    elif schema_editor.connection.vendor == "postgresql":
        expression = search.PG_CALL_TEXT.replace("t.", "")
        statements = [
            f"DROP INDEX IF EXISTS {fts}_call_ended",
            f"CREATE INDEX IF NOT EXISTS {fts}_call ON {table} "
            f"USING gin (to_tsvector('english', {expression}))",
        ]
    else:
        return
    with schema_editor.connection.cursor() as cursor:
        for sql in statements:
            cursor.execute(sql)


class Migration(migrations.Migration):
    dependencies = [("chat_app", "0022_conversation_language_agent_tool_language")]

    operations = [migrations.RunPython(forwards, backwards)]
