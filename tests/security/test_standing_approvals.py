"""Attacks on standing approvals: a remembered approval's constraint bypassed by spelling the
arguments differently, used by another person or in another conversation, granted by the
requester to themself, granted where an admin forbade it, used after its approver lost the
right to decide."""

from __future__ import annotations

import os
from typing import Any

import pytest

from chat_app.models import Conversation
from tests.approvals.conftest import (
    approver_mode,
    bound,
    requester_mode,
    waiting_call,
    workspace_of,
)
from tools_app.models import StandingApproval, ToolCall, ToolFunctionConfig
from tools_app.services.approval import ApprovalError
from tools_app.services.standing import arguments_match, toolcall_decide_widened

pytestmark = pytest.mark.django_db(transaction=True)
WAITS = ToolCall.Status.AWAITING_APPROVAL


def granted(tool, arguments, *, user, approver, conversation, match=None, scope="conversation"):
    call = waiting_call(tool, arguments, user=user, conversation=conversation)
    toolcall_decide_widened(
        user=approver,
        call_id=call.pk,
        approve=True,
        widening={"scope": scope, "match": match or {}},
    )
    return StandingApproval.objects.get(source_call=call)


UTC = {"timezone": "UTC"}


def clock_granted(user: Any, approver: Any, conversation: Any) -> StandingApproval:
    """A standing approval of current_time in UTC for ``user`` in ``conversation``."""
    return granted("current_time", UTC, user=user, approver=approver, conversation=conversation)


def clock_call(user: Any, conversation: Any) -> ToolCall:
    return bound("current_time", UTC, user=user, conversation=conversation)


def clock_status(user: Any, conversation: Any) -> str:
    return clock_call(user, conversation).status


def test_it_resolves_path_spellings_before_a_prefix(user, other_user, conversation, leads):
    approver_mode("file_read", leads)
    ws = workspace_of(conversation, user)
    (ws / "src").mkdir()
    (ws / "src" / "a.txt").write_text("a")
    (ws / "secret.txt").write_text("s")
    os.symlink("../secret.txt", ws / "src" / "link.txt")
    os.symlink("..", ws / "src" / "up")
    granted(
        "file_read",
        {"path": "src/a.txt"},
        user=user,
        approver=other_user,
        conversation=conversation,
        match={"path": {"kind": "prefix", "value": "src"}},
    )
    for inside in ("src/a.txt", "./src/a.txt", "src//a.txt", "/workspace/src/b.txt"):
        call = bound("file_read", {"path": inside}, user=user, conversation=conversation)
        assert call.status == ToolCall.Status.QUEUED, inside
    for outside in (
        "src/../secret.txt",  # lexically outside
        "src/link.txt",  # a symlink out of the prefix
        "src/up/secret.txt",  # a directory symlink out of it
        "srcx/a.txt",  # a string prefix, not a component prefix
        "sr",
        "secret.txt",
    ):
        call = bound("file_read", {"path": outside}, user=user, conversation=conversation)
        assert call.status in (WAITS, ToolCall.Status.DENIED), outside
        assert call.status != ToolCall.Status.QUEUED, outside
    # Leaving the workspace is refused by policy before any approval.
    escape = bound(
        "file_read", {"path": "src/../../etc/passwd"}, user=user, conversation=conversation
    )
    assert escape.status == ToolCall.Status.DENIED


def test_equals_means_exactly_the_same_command(user, other_user, conversation, leads):
    approver_mode("shell_exec", leads)
    granted(
        "shell_exec",
        {"command": "pytest -q"},
        user=user,
        approver=other_user,
        conversation=conversation,
    )
    same = bound("shell_exec", {"command": "pytest -q"}, user=user, conversation=conversation)
    assert same.status == ToolCall.Status.QUEUED
    for spelled in (
        "pytest -q && rm -rf .",
        "pytest -q; id",
        "pytest -q ",
        " pytest -q",
        "'pytest' -q",
        "pytest  -q",
        "pytest -q\nid",
    ):
        call = bound("shell_exec", {"command": spelled}, user=user, conversation=conversation)
        assert call.status == WAITS, spelled
    # An argument added (even a default) is not the same call either.
    extra = bound(
        "shell_exec", {"command": "pytest -q", "cwd": "."}, user=user, conversation=conversation
    )
    assert extra.status == WAITS


def test_a_host_is_the_url_host_exactly(user, conversation):
    # http_request's policy resolves hosts at binding: matched here directly (the same
    # function binding calls), with no network.
    grant = StandingApproval(
        user=user,
        tool="http_request",
        arguments={"url": "https://api.example.com/v1/a"},
        match={"url": "host"},
    )

    def call(url: str) -> ToolCall:
        return ToolCall(
            user=user, conversation=conversation, tool="http_request", arguments={"url": url}
        )

    assert arguments_match(grant, call("https://api.example.com/v2/b"))
    assert arguments_match(grant, call("https://API.example.com./"))
    for url in (
        "https://api.example.com.evil.net/",
        "https://evil.net/?https://api.example.com/",
        "https://api.example.com\\@evil.net/",
        "https://evil.net#@api.example.com",
        "https://api.example.com:8443/",
        "http://api.example.com/",
        "https://api.example.com /",
        "ftp://api.example.com/",
    ):
        assert not arguments_match(grant, call(url)), url


def test_a_grant_is_never_used_by_another_person_or_conversation(
    user, other_user, staff_user, conversation, leads
):
    approver_mode("current_time", leads)
    clock_granted(user, other_user, conversation)
    elsewhere = Conversation.objects.create(owner=user, title="another")
    assert clock_status(user, elsewhere) == WAITS
    theirs = Conversation.objects.create(owner=staff_user, title="root's")
    assert clock_status(staff_user, theirs) == WAITS


def test_the_requester_cannot_grant_themself(user, other_user, conversation, leads):
    approver_mode("current_time", leads)
    call = waiting_call("current_time", UTC, user=user, conversation=conversation)
    with pytest.raises(ApprovalError, match="you asked for this call"):
        toolcall_decide_widened(
            user=user, call_id=call.pk, approve=True, widening={"scope": "conversation"}
        )
    assert not StandingApproval.objects.exists()
    # A confirm step remembered while the function was in requester mode does not approve
    # anything once an approver must decide.
    requester_mode("current_time")
    clock_granted(user, user, conversation)
    approver_mode("current_time", leads)
    assert clock_status(user, conversation) == WAITS


def test_widening_where_an_admin_forbade_it(user, other_user, conversation, leads):
    approver_mode("current_time", leads)
    clock_granted(user, other_user, conversation)
    ToolFunctionConfig.objects.filter(name="current_time").update(standing_forbidden=True)
    # Grants made before no longer apply, and none can be made.
    call = clock_call(user, conversation)
    assert call.status == WAITS
    with pytest.raises(ApprovalError, match="one call only"):
        toolcall_decide_widened(
            user=other_user, call_id=call.pk, approve=True, widening={"scope": "conversation"}
        )
    assert ToolCall.objects.get(pk=call.pk).status == WAITS


def test_a_grant_dies_with_its_approvers_rights(user, other_user, conversation, leads):
    approver_mode("current_time", leads)
    clock_granted(user, other_user, conversation)
    assert clock_status(user, conversation) == ToolCall.Status.QUEUED
    leads.user_set.remove(other_user)
    assert clock_status(user, conversation) == WAITS
    leads.user_set.add(other_user)
    other_user.is_active = False
    other_user.save()
    assert clock_status(user, conversation) == WAITS
