"""Conversations as a whole (issue 23, part 1): plain-text titles, pin, archive, the sidebar's
date groups, search, export and import, share links — each the owner's only."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from chat_app.models import Conversation, Message
from chat_app.services import sharing, transfer
from chat_app.services.conversations import sidebar_groups
from chat_app.services.search import conversations_search
from tests.helpers import logged_in
from tools_app.models import ToolCall


def talk(owner: Any, title: str, *texts: str) -> Conversation:
    conversation = Conversation.objects.create(owner=owner, title=title)
    for i, text in enumerate(texts):
        Message.objects.create(
            conversation=conversation, role="user" if i % 2 == 0 else "assistant", content=text
        )
    return conversation


def call(conversation: Conversation, tool: str, arguments: Any, result: Any) -> ToolCall:
    message = Message.objects.create(conversation=conversation, role="assistant", content="")
    record = ToolCall.objects.create(
        conversation=conversation, message=message, tool=tool, arguments=arguments
    )
    record.status = ToolCall.Status.SUCCEEDED
    record.result = result
    record.duration_ms = 12
    record.finished_at = timezone.now()
    record.save()
    return record


# ---- sidebar ---------------------------------------------------------------------------


def test_the_sidebar_groups_by_date_with_pinned_first(user):
    now = timezone.now()
    ages = {"today": 0, "yesterday": 1, "week": 5, "month": 20, "old": 200, "pinned": 300}
    made = {}
    for name, days in ages.items():
        made[name] = Conversation.objects.create(owner=user, title=name)
        Conversation.objects.filter(pk=made[name].pk).update(updated_at=now - timedelta(days=days))
    client = logged_in(user)
    client.post(f"/c/{made['pinned'].pk}/pin/", {"pinned": "1"})
    client.post(f"/c/{made['old'].pk}/archive/", {"archived": "1"})
    made["archived"] = Conversation.objects.create(owner=user, title="gone")
    client.post(f"/c/{made['archived'].pk}/archive/", {"archived": "1"})
    from chat_app.selectors import sidebar_conversations

    groups = sidebar_groups(sidebar_conversations(user), now=now)
    assert [(g.label, [c.title for c in g.conversations]) for g in groups] == [
        ("Pinned", ["pinned"]),
        ("Today", ["today"]),
        ("Yesterday", ["yesterday"]),
        ("Previous 7 days", ["week"]),
        ("Previous 30 days", ["month"]),
    ]
    page = client.get(f"/c/{made['today'].pk}/").content.decode()
    assert page.index(">Pinned<") < page.index(">Today<") < page.index(">Previous 30 days<")
    assert "gone" not in page and 'id="conversation-search"' in page
    archived = client.get("/c/archived/").content.decode()
    assert "gone" in archived and ">old<" in archived
    # Archived ones stay readable; unarchiving brings them back.
    opened = client.get(f"/c/{made['archived'].pk}/").content.decode()
    assert 'id="archive-button">Unarchive<' in opened  # its own actions, while it is open
    client.post(f"/c/{made['archived'].pk}/archive/", {"archived": "0"})
    assert "gone" in client.get(f"/c/{made['today'].pk}/").content.decode()
    # An older month is its own group.
    made["old"].refresh_from_db()
    old = now - timedelta(days=200)
    label = old.strftime("%B %Y") if old.year != now.year else old.strftime("%B")
    assert [g.label for g in sidebar_groups([made["old"]], now=now)] == [label]


# ---- search ----------------------------------------------------------------------------


@pytest.mark.modes  # SQLite FTS5 in embedded mode, PostgreSQL full text in distributed mode
def test_search_finds_titles_messages_and_tool_calls_of_the_owner_only(user, other_user):
    mine = talk(user, "Quarterly budget", "How is the kangaroo project going?", "Fine.")
    call(mine, "shell_exec", {"command": "grep wombat /srv/notes"}, {"stdout": "platypus 42"})
    theirs = talk(other_user, "Kangaroo secrets", "kangaroo wombat platypus budget")
    assert [h.kind for h in conversations_search(owner_id=user.pk, query="quarterly")] == ["title"]
    kangaroo = conversations_search(owner_id=user.pk, query="kangaroo")
    assert [(h.conversation_id, h.kind) for h in kangaroo] == [(mine.pk, "message")]
    assert "<mark>kangaroo</mark>" in kangaroo[0].snippet
    # Tool calls: the arguments and the result; the last word is a prefix.
    assert {h.kind for h in conversations_search(owner_id=user.pk, query="wombat")} == {"tool call"}
    assert conversations_search(owner_id=user.pk, query="platyp")[0].kind == "tool call"
    # Every word must match.
    assert conversations_search(owner_id=user.pk, query="kangaroo wombat") == []
    # Never another person's, whatever they wrote.
    for word in ("kangaroo", "secrets", "budget", "platypus"):
        assert theirs.pk not in {
            h.conversation_id for h in conversations_search(owner_id=user.pk, query=word)
        }
    # Search syntax in a query is only words.
    for hostile in ('"', "kangaroo OR secrets", "NEAR(a b)", "*", "a:*|b", "(", "' & !"):
        conversations_search(owner_id=user.pk, query=hostile)
    # Renamed, edited and deleted things follow.
    mine.title = "Annual plan"
    mine.save()
    assert conversations_search(owner_id=user.pk, query="quarterly") == []
    assert conversations_search(owner_id=user.pk, query="annual")[0].kind == "title"
    mine.delete()
    assert conversations_search(owner_id=user.pk, query="kangaroo") == []


def test_search_snippets_are_escaped_and_the_pages_show_them(user):
    talk(user, "<script>alert(1)</script> title", "look <img src=x onerror=alert(1)> zebra")
    client = logged_in(user)
    page = client.get("/search/", {"q": "zebra"}).content.decode()
    assert "<mark>zebra</mark>" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    htmx = client.get("/search/", {"q": "script alert"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<script>alert" not in htmx and "&lt;script&gt;" in htmx
    assert "search-hit" in htmx and "<html" not in htmx


# ---- export, import --------------------------------------------------------------------


def test_export_as_json_and_markdown_and_import_back(user, other_user):
    source = talk(user, "Deploy **notes**", "Deploy the app", "Done: ```code``` inside")
    record = call(source, "shell_exec", {"command": "ls"}, {"stdout": "a.txt", "success": True})
    client = logged_in(user)
    exported = client.get(f"/c/{source.pk}/export.json")
    assert exported["Content-Disposition"].startswith('attachment; filename="deploy-notes-')
    data = json.loads(exported.content)
    assert data["format"] == "control-center.conversation" and data["title"] == "Deploy **notes**"
    assert [m["content"] for m in data["messages"]][:2] == [
        "Deploy the app",
        "Done: ```code``` inside",
    ]
    (exported_call,) = data["messages"][2]["tool_calls"]
    assert (
        exported_call["arguments"] == {"command": "ls"} and exported_call["status"] == "succeeded"
    )
    assert exported_call["result"]["stdout"] == "a.txt" and exported_call["duration_ms"] == 12
    markdown = client.get(f"/c/{source.pk}/export.md").content.decode()
    assert (
        markdown.startswith("# Deploy **notes**")
        and "**Tool call `shell_exec`** — succeeded" in markdown
    )
    assert "````\n" not in markdown.split("Done:")[0] and '"command": "ls"' in markdown

    # Times a person reads (the JSON keeps the exact ones).
    first = source.messages.order_by("created_at", "id").first()
    assert f"## You · {first.created_at.strftime('%Y-%m-%d %H:%M')} UTC\n" in markdown
    assert re.search(r"Exported from Control Center on \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", markdown)
    assert not re.search(r"\d\d:\d\d:\d\d\.\d{6}", markdown)

    # Bob imports Alice's export (a file she gave him): a new conversation of his, calls as records.
    bob = logged_in(other_user)
    response = bob.post("/c/import/", {"file": _upload(exported.content)})
    imported = Conversation.objects.exclude(pk=source.pk).get()
    assert response.status_code == 302 and response.url == f"/c/{imported.pk}/"
    assert imported.owner == other_user and imported.title == "Deploy **notes**"
    assert [m.content for m in imported.messages.order_by("created_at", "id")] == [
        m.content for m in source.messages.order_by("created_at", "id")
    ]
    (copy,) = ToolCall.objects.filter(conversation=imported)
    assert (copy.status, copy.arguments, copy.result) == (
        record.status,
        record.arguments,
        record.result,
    )
    assert copy.worker == "" and copy.queue == ""  # a record: never queued, never run
    assert copy.created_at == record.created_at


def _upload(content: bytes | str, name: str = "export.json") -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    if isinstance(content, str):
        content = content.encode()
    return SimpleUploadedFile(name, content, content_type="application/json")


GOOD = {"format": "control-center.conversation", "version": 1, "title": "t", "messages": []}


MALFORMED = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a conversation export"),
    ({**GOOD, "version": 2}, "version"),
    ({**GOOD, "messages": "many"}, "messages"),
    ({**GOOD, "messages": [{"role": "system", "content": "x"}]}, "messages.0.role"),
    ({**GOOD, "messages": [{"role": "user", "content": 5}]}, "messages.0.content"),
    ({**GOOD, "messages": [{"role": "user", "admin": True}]}, "messages.0.admin"),
    ({**GOOD, "title": "x" * 201}, "title"),
    (
        {
            **GOOD,
            "messages": [
                {"role": "user", "tool_calls": [{"tool": "shell_exec", "status": "queued"}]}
            ],
        },
        "messages.0.tool_calls.0.status",
    ),
    ({**GOOD, "messages": [{"role": "user", "created_at": "yesterday"}]}, "created_at"),
    ({**GOOD, "messages": [{"role": "user"}] * (transfer.MAX_MESSAGES + 1)}, "messages"),
    ("[" * 100_000 + "]" * 100_000, "not"),
]


def test_a_malformed_import_gets_a_clear_error_and_creates_nothing(user):
    client = logged_in(user)
    for payload, error in MALFORMED:
        raw = payload if isinstance(payload, str) else json.dumps(payload)
        response = client.post("/c/import/", {"file": _upload(raw)})
        assert response.status_code == 400, error
        assert error in response.content.decode(), (error, response.content[:300])
    assert not Conversation.objects.exists()


def test_an_imported_title_with_a_script_is_shown_escaped(user):
    payload = {
        **GOOD,
        "title": "<script>alert('t')</script>",
        "messages": [{"role": "assistant", "content": "<img src=x onerror=alert(2)>"}],
    }
    client = logged_in(user)
    response = client.post("/c/import/", {"file": _upload(json.dumps(payload))})
    page = client.get(response.url).content.decode()
    assert "<script>alert('t')" not in page and "&lt;script&gt;alert(" in page
    assert "<img src=x onerror" not in page


def test_an_oversized_import_is_refused(user, monkeypatch):
    monkeypatch.setattr(transfer, "MAX_IMPORT_BYTES", 1000)
    raw = json.dumps({**GOOD, "title": "x", "messages": [{"role": "user", "content": "y" * 2000}]})
    response = logged_in(user).post("/c/import/", {"file": _upload(raw)})
    assert response.status_code == 400 and "larger than" in response.content.decode()


# ---- share links -----------------------------------------------------------------------


def test_a_share_link_shows_what_the_owner_chose_until_revoked(user, other_user):
    conversation = talk(user, "Shared plan", "the plan is simple", "indeed")
    call(conversation, "shell_exec", {"command": "cat secret-args"}, {"stdout": "secret-output"})
    alice, bob = logged_in(user), logged_in(other_user)
    alice.post(f"/c/{conversation.pk}/share/", {"include_tools": "on"})
    share = sharing.share_active(conversation)
    assert share is not None and len(share.token) >= 40
    page = bob.get(f"/s/{share.token}/").content.decode()
    assert "the plan is simple" in page and "secret-output" in page and "secret-args" in page
    assert "Shared read-only by <strong>alice</strong>" in page
    # The owner hides the tool calls: a new link, the old one dead.
    alice.post(f"/c/{conversation.pk}/share/", {})
    hidden = sharing.share_active(conversation)
    assert hidden is not None and hidden.token != share.token
    assert bob.get(f"/s/{share.token}/").status_code == 404
    page = bob.get(f"/s/{hidden.token}/").content.decode()
    assert "the plan is simple" in page
    assert "secret-output" not in page and "secret-args" not in page and "shell_exec" not in page
    # The link does not open the conversation itself, nor does it need the audit permission.
    assert bob.get(f"/c/{conversation.pk}/").status_code == 404
    from tools_app.models import AuditRecord

    assert not AuditRecord.objects.filter(kind="read").exists()
    # Signed in only.
    assert Client().get(f"/s/{hidden.token}/").status_code == 302
    # Revoked, then deleted: gone.
    alice.post(f"/c/{conversation.pk}/share/", {"action": "revoke"})
    assert bob.get(f"/s/{hidden.token}/").status_code == 404
    alice.post(f"/c/{conversation.pk}/share/", {})
    last = sharing.share_active(conversation)
    assert last is not None and bob.get(f"/s/{last.token}/").status_code == 200
    alice.post(f"/c/{conversation.pk}/delete/")
    assert bob.get(f"/s/{last.token}/").status_code == 404
    assert bob.get("/s/" + "A" * 43 + "/").status_code == 404


# ---- another person's conversation, by id ----------------------------------------------


def test_another_persons_conversation_cannot_be_exported_shared_pinned_archived_or_deleted(
    user, other_user
):
    secret = talk(user, "Alice only", "private words")
    bob = logged_in(other_user)
    attempts = [
        ("get", f"/c/{secret.pk}/export.json", {}),
        ("get", f"/c/{secret.pk}/export.md", {}),
        ("get", f"/c/{secret.pk}/share/", {}),
        ("post", f"/c/{secret.pk}/share/", {"include_tools": "on"}),
        ("post", f"/c/{secret.pk}/share/", {"action": "revoke"}),
        ("post", f"/c/{secret.pk}/pin/", {"pinned": "1"}),
        ("post", f"/c/{secret.pk}/archive/", {"archived": "1"}),
        ("post", f"/c/{secret.pk}/delete/", {}),
        ("post", f"/c/{secret.pk}/rename/", {"title": "pwned"}),
    ]
    for method, url, data in attempts:
        response = getattr(bob, method)(url, data)
        assert response.status_code == 404, (url, response.status_code)
        assert "private words" not in response.content.decode()
    secret.refresh_from_db()
    assert (secret.title, secret.pinned_at, secret.archived_at) == ("Alice only", None, None)
    assert not secret.shares.exists()
    assert "Alice only" not in bob.get("/search/", {"q": "private"}).content.decode()
    assert "Alice only" not in bob.get("/c/archived/").content.decode()


@pytest.mark.modes
def test_search_finds_a_tool_call_once_it_ends_and_a_refused_one_at_once(user):
    """A call is indexed when it ends (binding, the hot path, writes no index row): one
    under way is not found yet; one refused as it is bound is found at once."""
    mine = talk(user, "Calls", "hi")
    running = ToolCall.objects.create(
        conversation=mine, tool="shell_exec", arguments={"command": "grep numbat /srv"}
    )
    ToolCall.objects.create(
        conversation=mine,
        tool="shell_exec",
        arguments={"command": "rm -rf quokka"},
        status=ToolCall.Status.DENIED,
        error="policy: rm is blocked",
    )
    assert conversations_search(owner_id=user.pk, query="numbat") == []
    assert [h.kind for h in conversations_search(owner_id=user.pk, query="quokka")] == ["tool call"]
    running.status = ToolCall.Status.RUNNING
    running.save()
    assert conversations_search(owner_id=user.pk, query="numbat") == []
    running.status = ToolCall.Status.SUCCEEDED
    running.result = {"stdout": "bilby"}
    running.save()
    assert [h.ref_id for h in conversations_search(owner_id=user.pk, query="numbat bilby")] == [
        running.pk
    ]


def _search_schema() -> set[str]:
    """The conversation search's tool-call trigger (SQLite) or index (PostgreSQL), by name,
    with " (ended)" when it covers ended calls only."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                "AND name LIKE 'chat_search_fts_call_%' AND sql LIKE '%AFTER INSERT%'"
            )
        else:
            cursor.execute(
                "SELECT indexname, indexdef FROM pg_indexes "
                "WHERE indexname LIKE 'chat_search_fts_call%'"
            )
        return {name + (" (ended)" if "succeeded" in sql else "") for name, sql in cursor}


def _indexed_calls() -> set[int]:
    from django.db import connection

    if connection.vendor != "sqlite":
        return set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT rowid / 4 FROM chat_search_fts WHERE rowid % 4 = 2")
        return {row[0] for row in cursor}


@pytest.mark.modes
def test_the_search_migration_indexes_calls_when_they_end_and_goes_back(user):
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [("chat_app", "0022_conversation_language_agent_tool_language")]
    after = [("chat_app", "0023_search_calls_indexed_when_ended")]
    sqlite = connection.vendor == "sqlite"
    mine = talk(user, "Migrated", "hi")

    def calls() -> Any:
        # ToolCall as the database holds it now: going back to chat_app 0022 also takes back
        # the later migrations of other apps that depend on chat_app's (a column or two).
        loader = MigrationExecutor(connection).loader
        state = loader.project_state(list(loader.applied_migrations))
        return state.apps.get_model("tools_app", "ToolCall")

    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        assert _search_schema() == {"chat_search_fts_call_ai" if sqlite else "chat_search_fts_call"}
        # Indexed when bound (the rule before), on SQLite a row of its own.
        queued = calls().objects.create(
            conversation_id=mine.pk, tool="shell_exec", arguments={"command": "echo wallaby"}
        )
        assert _indexed_calls() == ({queued.pk} if sqlite else set())
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        assert _search_schema() == {
            "chat_search_fts_call_ended_ai (ended)"
            if sqlite
            else "chat_search_fts_call_ended (ended)"
        }
        assert _indexed_calls() == set()  # still under way: out of the index
        assert conversations_search(owner_id=user.pk, query="wallaby") == []
        queued.status = ToolCall.Status.SUCCEEDED
        queued.save()
        assert len(conversations_search(owner_id=user.pk, query="wallaby")) == 1
        dingo = calls().objects.create(
            conversation_id=mine.pk, tool="shell_exec", arguments={"command": "echo dingo"}
        )
        executor = MigrationExecutor(connection)
        executor.migrate(before)  # back: the rule before, the call under way indexed again
        assert _search_schema() == {"chat_search_fts_call_ai" if sqlite else "chat_search_fts_call"}
        assert _indexed_calls() == ({queued.pk, dingo.pk} if sqlite else set())
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert conversations_search(owner_id=user.pk, query="dingo") == []
    assert len(conversations_search(owner_id=user.pk, query="wallaby")) == 1
