"""Issue 20, finding 9: create_report had no quota; any user (or a model steered by a page)
could fill the disk one report at a time. Reports are counted per user across their
conversations, by number and by bytes; deleting old ones makes room again."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from chat_app.models import Conversation
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tools_app.runtime import workspace_dir_for, workspace_id_for

pytestmark = [pytest.mark.django_db(transaction=True)]

DELETE = "delete old reports (or the conversations that hold them) first"


def reports_dir(conversation: Conversation) -> Path:
    workspace = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    return workspace / "reports"


@pytest.fixture
def conversations(user, other_user):
    made = [
        Conversation.objects.create(owner=owner, title=title)
        for owner, title in ((user, "a"), (user, "b"), (other_user, "c"))
    ]
    for conversation in made:  # ids come round again in a fresh test database
        clear(reports_dir(conversation))
    yield made
    for conversation in made:
        clear(reports_dir(conversation))


def clear(folder: Path) -> None:
    if folder.is_symlink():  # planted by another test
        folder.unlink()
    shutil.rmtree(folder, ignore_errors=True)


def report(user, conversation, content="# Report\n\nShort [1].\n\n[1] https://a.example/\n"):
    return run_tool(
        "create_report",
        user=user,
        conversation_id=conversation.pk,
        reasoning="done",
        title="Quota",
        user_request_language_reference="quota",
        content=content,
        confidence="high",
    )


def test_it_refuses_a_report_past_the_number_per_user(user, other_user, conversations):
    first, second, theirs = conversations
    configure("agent", max_reports_per_user=2)
    ok(report(user, first))
    ok(report(user, second))
    refused = report(user, first)
    assert refused.status == "denied"
    assert refused.error == f"policy: you have 2 reports; the limit is 2 per user — {DELETE}"
    assert len(list(reports_dir(first).iterdir())) == 1
    ok(report(other_user, theirs))  # per user
    # Deleting one makes room again.
    next(reports_dir(second).iterdir()).unlink()
    ok(report(user, second))


def test_it_refuses_a_report_past_the_bytes_per_user(user, conversations):
    first, second, _ = conversations
    configure("agent", max_report_bytes_per_user=1_000)
    ok(report(user, first, content="a" * 600))
    refused = report(user, second, content="b" * 600)
    assert refused.status == "denied"
    assert refused.error == (
        "policy: your reports take 600 bytes and this one 600; the limit is 1,000 bytes per "
        f"user — {DELETE}"
    )
    assert not reports_dir(second).exists()
    ok(report(user, second, content="b" * 400))


def test_a_deleted_conversation_no_longer_counts(user, conversations):
    first, second, _ = conversations
    configure("agent", max_reports_per_user=1)
    ok(report(user, first))
    assert report(user, second).status == "denied"
    first.delete()
    ok(report(user, second))
