"""History import (issue 39, item 8): Open WebUI, ChatGPT and LibreChat exports become the
person's own conversations, branches as the product's versions, nothing run again."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from chat_app import selectors
from chat_app.models import Conversation, Message, Turn
from chat_app.services.history_import import HistoryImportError, history_import, parse
from tools_app.models import AuditRecord, ToolCall

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def raw(data: Any) -> bytes:
    return json.dumps(data).encode()


def shown(conversation: Conversation) -> list[tuple[str, str]]:
    """The messages the chat shows, in order: the shown branch."""
    return [(m.role, m.content) for m in selectors.conversation_messages(conversation)]


def run(owner: Any, name: str, fmt: str = "auto") -> Any:
    return history_import(
        owner=owner, raw=(FIXTURES / name).read_bytes(), fmt=fmt, actor=owner, via="test"
    )


@pytest.mark.modes  # bulk writes and their ids on PostgreSQL too
def test_it_imports_open_webui_with_its_branches(user):
    summary = run(user, "openwebui-export.json")
    assert summary.format == "openwebui"
    assert len(summary.conversations) == 2 and summary.messages == 9
    ports = Conversation.objects.get(title="Listening ports")
    assert ports.owner == user and ports.imported_from == "openwebui"
    # currentId a2: the regenerated answer a1b, then u2 → a2.
    assert shown(ports) == [
        ("user", "How do I check which ports a Linux server listens on?"),
        (
            "assistant",
            "Run `sudo ss -tulpn`: **t**cp, **u**dp, **l**istening, **p**rocess, **n**umeric.",
        ),
        ("user", "And only port 443?"),
        ("assistant", "Filter it: `sudo ss -tlnp 'sport = :443'`."),
    ]
    tree = selectors.turn_tree(ports.pk)
    first = tree.path[0]
    info = tree.branch_info(first)
    assert info is not None and (info.index, info.count) == (2, 2)
    older = Turn.objects.get(pk=info.previous)
    assert [m.content for m in older.messages.order_by("created_at", "id")][1].startswith("Use `ss")
    # An edited first message: two root turns, the second shown.
    translations = Conversation.objects.get(title="Translations")
    assert shown(translations)[0] == ("user", "Translate 'release notes' into German.")
    assert (
        selectors.turn_tree(translations.pk)
        .branch_info(selectors.turn_tree(translations.pk).path[0])
        .count
        == 2
    )
    # Original times, finished turns from an import, nothing queued or run.
    assert ports.created_at.year == 2024
    assert set(Turn.objects.values_list("source", "status")) == {("import", "succeeded")}
    assert not ToolCall.objects.exists()


@pytest.mark.modes  # bulk writes and their ids on PostgreSQL too
def test_it_imports_chatgpt_skipping_tool_calls_and_hidden_messages(user):
    summary = run(user, "chatgpt-conversations.json")
    assert summary.format == "chatgpt" and len(summary.conversations) == 2
    powers = Conversation.objects.get(title="Powers of two")
    assert shown(powers) == [
        ("user", "What is 2**64? Compute it."),
        ("assistant", "2**64 = 18446744073709551616."),
        ("user", "And 2**32?"),
        ("assistant", "4294967296."),
    ]
    tree = selectors.turn_tree(powers.pk)
    assert tree.branch_info(tree.path[0]).count == 2  # the regenerated answer is a version
    assert summary.skipped_messages == {
        "hidden message": 1,
        "tool call or tool output": 2,
        "image or file": 1,
    }
    primes = Conversation.objects.get(title="Primes")
    assert shown(primes)[0] == ("user", "Name a prime above 1000.")


@pytest.mark.parametrize("name", ["librechat-export.json", "librechat-export-tree.json"])
def test_it_imports_librechat_flat_and_tree(user, name):
    summary = run(user, name)
    assert summary.format == "librechat" and len(summary.conversations) == 1
    (conversation,) = summary.conversations
    assert conversation.title == "Backup haiku"
    assert [role for role, _ in shown(conversation)] == ["user", "assistant", "user", "assistant"]
    assert shown(conversation)[1][1].startswith("Snapshots every hour")
    tree = selectors.turn_tree(conversation.pk)
    assert tree.branch_info(tree.path[0]).count == 2
    assert summary.skipped_messages == {"reasoning": 1}


def test_each_format_reads_the_same_in_the_chat(user):
    """The same branch shown, whichever of the two LibreChat shapes it came in."""
    flat = run(user, "librechat-export.json").conversations[0]
    tree = run(user, "librechat-export-tree.json").conversations[0]
    assert shown(flat) == shown(tree)


def test_a_second_import_of_the_same_file_skips_what_came_in(user):
    run(user, "openwebui-export.json")
    again = run(user, "openwebui-export.json")
    assert again.conversations == [] and again.skipped_conversations == {"already imported": 2}
    assert Conversation.objects.count() == 2


def test_the_import_is_audited(user):
    run(user, "chatgpt-conversations.json")
    (record,) = AuditRecord.objects.filter(kind=AuditRecord.Kind.IMPORT)
    assert record.user == user and record.tool == "chatgpt"
    assert record.detail["for"] == "alice" and record.detail["conversations"] == 2
    assert record.detail["messages"] == 9 and len(record.detail["sha256"]) == 64


# ---- malformed and hostile files -----------------------------------------------------------


def refused(data: Any, fmt: str = "auto") -> str:
    with pytest.raises(HistoryImportError) as exc:
        parse(raw(data) if not isinstance(data, bytes) else data, fmt)
    return str(exc.value)


def test_a_missing_field_is_refused_saying_where(db):
    data = fixture("chatgpt-conversations.json")
    del data[1]["mapping"]["p1"]["message"]["author"]["role"]
    assert refused(data) == "conversations[1].mapping['p1'].message.author.role: Field required"


def test_a_wrong_type_is_refused_saying_where(db):
    data = fixture("openwebui-export.json")
    data[0]["chat"]["history"]["messages"]["u2"]["content"] = ["not", "text"]
    assert refused(data).startswith("[0].chat.history.messages['u2'].content: Input should be")
    data = fixture("librechat-export-tree.json")
    data["messages"][0]["children"][1]["children"][0]["text"] = 7
    assert refused(data).startswith("messages[0].children[1].children[0].text: Input should be")


def test_a_cycle_in_parent_links_is_refused(db):
    data = fixture("librechat-export.json")
    data["messages"][0]["parentMessageId"] = "l-a2"
    assert "go round in a circle" in refused(data)
    data = fixture("chatgpt-conversations.json")
    data[0]["mapping"]["root"]["parent"] = "ans2"
    assert "go round in a circle" in refused(data)


def test_a_parent_outside_the_conversation_is_refused(db):
    data = fixture("openwebui-export.json")
    data[1]["chat"]["history"]["messages"]["r1"]["parentId"] = "elsewhere"
    assert "its parent 'elsewhere' is not in the conversation" in refused(data)


def test_deep_nesting_and_huge_strings_are_refused(db):
    assert "nested deeper" in refused(b"[" * 5000 + b"]" * 5000)
    data = fixture("librechat-export.json")
    data["messages"][1]["text"] = "x" * 1_000_001
    assert refused(data).startswith("messages[1].text: String should have at most")


def test_a_file_of_no_known_format_is_refused(db):
    assert "not a conversation export of Control Center, Open WebUI" in refused({"hello": 1})
    assert refused(b"{not json").startswith("not valid JSON")
    assert refused([{"mapping": {}}], "librechat").startswith("the file: expected one conversation")


def test_an_oversized_file_is_refused(db, monkeypatch):
    from chat_app.services.history_import import importer

    monkeypatch.setattr(importer, "MAX_IMPORT_BYTES", 100)
    assert "larger than" in refused(fixture("librechat-export.json"))


def test_too_many_messages_are_refused(db, monkeypatch):
    from chat_app.services.history_import import importer

    monkeypatch.setattr(importer, "MAX_MESSAGES_PER_CONVERSATION", 3)
    assert "more than 3 messages" in refused(fixture("librechat-export.json"))


@pytest.mark.modes  # bulk writes and their ids on PostgreSQL too
def test_a_refused_file_imports_nothing(user):
    data = fixture("openwebui-export.json")
    data[1]["chat"]["history"]["messages"]["r1"]["parentId"] = "elsewhere"
    with pytest.raises(HistoryImportError):
        history_import(owner=user, raw=raw(data), actor=user, via="test")
    assert not Conversation.objects.exists() and not Message.objects.exists()


@pytest.mark.modes  # bulk writes and their ids on PostgreSQL too
def test_a_long_tree_imports_without_recursion(user):
    """A 3,000-message chain (1,500 turns) in the flat LibreChat form."""
    data = fixture("librechat-export.json")
    template = data["messages"][0]
    messages, parent = [], "00000000-0000-0000-0000-000000000000"
    for i in range(3000):
        message = copy.deepcopy(template)
        message.update(messageId=f"m{i}", parentMessageId=parent, isCreatedByUser=i % 2 == 0)
        message["text"] = f"message {i}"
        messages.append(message)
        parent = f"m{i}"
    data["messages"] = messages
    (conversation,) = history_import(
        owner=user, raw=raw(data), actor=user, via="test"
    ).conversations
    assert len(shown(conversation)) == 3000


@pytest.mark.modes  # PostgreSQL refuses NUL in text
def test_nul_is_stored_cleaned_and_a_lone_surrogate_refused(user):
    text = (FIXTURES / "librechat-export.json").read_text()
    nul = text.replace("Write a haiku about backups.", "Write\\u0000 a haiku about backups.")
    (conversation,) = history_import(owner=user, raw=nul, actor=user, via="test").conversations
    assert shown(conversation)[0] == ("user", "Write a haiku about backups.")
    broken = text.replace("Write a haiku about backups.", "Write a \\ud800haiku.")
    with pytest.raises(HistoryImportError) as exc:
        history_import(owner=user, raw=broken, actor=user, via="test")
    assert str(exc.value).startswith("messages[0].text: Input should be a valid string")


def test_a_librechat_cycle_names_the_message(db):
    data = fixture("librechat-export.json")
    data["messages"][0]["parentMessageId"] = "l-a2"
    assert refused(data) == "message 'l-u1': the parent links go round in a circle"
