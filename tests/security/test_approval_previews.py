"""Attacks on approval previews and two-person approvals (issue 36): a preview shows a file's
content, so only someone who may decide the call sees it (another member, the requester in
approver mode, a call of someone else's conversation: 403/404); an approver's edit reads only
the file the call names (not the requester's other files); edited arguments never make
it read outside what the tool could write (``..``, absolute paths, a link in the workspace
leading out); untrusted content is escaped; one approver is one approval, and the requester
is none."""

from __future__ import annotations

import os
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import Client

from chat_app.models import Conversation
from tests.approvals.conftest import approver_mode, requester_mode, waiting_call, workspace_of
from tests.helpers import logged_in
from tools_app.models import ToolCall, ToolCallApproval
from tools_app.services.approval import ApprovalError, toolcall_decide

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def carol(transactional_db: None) -> Any:
    return get_user_model().objects.create_user("carol", password="carol-password-1")


def test_only_whoever_may_decide_sees_a_preview(user, other_user, carol, conversation):
    requester_mode("file_write")
    (workspace_of(conversation, user) / "plan.txt").write_text("private plan\n")
    call = waiting_call(
        "file_write",
        {"path": "plan.txt", "content": "new plan\n"},
        user=user,
        conversation=conversation,
    )
    url = f"/approvals/{call.pk}/preview/"
    mine = logged_in(user).get(url)
    assert mine.status_code == 200
    assert '<span class="diff-line diff-del">-private plan</span>' in mine.content.decode()
    # Someone else's confirm step: not even a hint it exists.
    assert logged_in(other_user).get(url).status_code == 404
    assert logged_in(other_user).post(url, {"arguments": "{}"}).status_code == 404
    assert logged_in(user).get("/approvals/999999/preview/").status_code == 404
    assert Client().get(url).status_code == 302  # to the login page

    # Approver mode: the requester and a non-approver are refused; an approver sees it.
    leads = Group.objects.create(name="leads")
    leads.user_set.add(other_user)
    approver_mode("file_write", leads)
    theirs = waiting_call(
        "file_write", {"path": "plan.txt", "content": "x\n"}, user=user, conversation=conversation
    )
    url = f"/approvals/{theirs.pk}/preview/"
    own = logged_in(user).get(url)
    assert own.status_code == 403 and "you asked for this call" in own.content.decode()
    assert "private plan" not in own.content.decode()
    outsider = logged_in(carol).get(url)
    assert outsider.status_code == 403 and "private plan" not in outsider.content.decode()
    assert "private plan" in logged_in(other_user).get(url).content.decode()
    # A call of another person's conversation is no more visible through the preview.
    elsewhere = Conversation.objects.create(owner=carol, title="Carol's")
    requester_mode("file_write")
    hers = waiting_call(
        "file_write", {"path": "a", "content": "b"}, user=carol, conversation=elsewhere
    )
    assert logged_in(user).get(f"/approvals/{hers.pk}/preview/").status_code == 404
    # Decided: nothing to preview any more.
    toolcall_decide(user=carol, call_id=hers.pk, approve=False)
    assert logged_in(carol).get(f"/approvals/{hers.pk}/preview/").status_code == 404


def test_edited_arguments_never_read_outside_the_workspace(user, conversation):
    requester_mode("file_write")
    workspace = workspace_of(conversation, user)
    os.symlink("/etc/passwd", workspace / "passwd")
    os.symlink("/etc", workspace / "etc")
    call = waiting_call(
        "file_write", {"path": "ok.txt", "content": "x"}, user=user, conversation=conversation
    )
    client = logged_in(user)
    url = f"/approvals/{call.pk}/preview/"
    for path, words in (
        (
            "../../etc/passwd",
            "no preview: policy: &#x27;../../etc/passwd&#x27; leaves the workspace",
        ),
        ("/etc/passwd", "no preview: policy: absolute path &#x27;/etc/passwd&#x27; is outside"),
        ("/workspace/../etc/passwd", "no preview: policy:"),
        ("passwd", "no preview: &#x27;passwd&#x27; is a symbolic link"),
        ("etc/passwd", "no preview: &#x27;etc&#x27; is a symbolic link"),
        ("/mnt/root/etc/passwd", "no preview: policy:"),
    ):
        body = client.post(url, {"arguments": f'{{"path": "{path}", "content": "x"}}'})
        text = body.content.decode()
        assert body.status_code == 200 and words in text, (path, text)
        assert "root:" not in text, path
    # Not JSON: the call's own arguments are shown, with why.
    bad = client.post(url, {"arguments": "{nope"}).content.decode()
    assert "showing the call&#x27;s own arguments: the arguments are not valid JSON" in bad


def test_an_approvers_edit_reads_only_the_file_the_call_names(
    user, other_user, conversation, leads
):
    workspace = workspace_of(conversation, user)
    (workspace / "plan.txt").write_text("the plan\n")
    (workspace / "diary.txt").write_text("alice's private diary\n")
    approver_mode("file_write", leads)
    call = waiting_call(
        "file_write", {"path": "plan.txt", "content": "x\n"}, user=user, conversation=conversation
    )
    url = f"/approvals/{call.pk}/preview/"
    edited = '{"path": "diary.txt", "content": ""}'
    answer = logged_in(other_user).post(url, {"arguments": edited}).content.decode()
    assert "diary" not in answer.replace("diary.txt", "")  # the file's name, never its content
    assert "for anyone but the requester the preview reads only the file the call names" in answer
    # The same path with other content still previews; so does the requester's own edit.
    same = '{"path": "plan.txt", "content": "y\n"}'
    assert "-the plan" in logged_in(other_user).post(url, {"arguments": same}).content.decode()
    requester_mode("file_write")
    mine = waiting_call(
        "file_write", {"path": "plan.txt", "content": "x\n"}, user=user, conversation=conversation
    )
    own = logged_in(user).post(f"/approvals/{mine.pk}/preview/", {"arguments": edited})
    assert "alice&#x27;s private diary" in own.content.decode()


def test_untrusted_content_is_escaped_in_the_diff(user, conversation):
    requester_mode("file_write")
    (workspace_of(conversation, user) / "page.html").write_text("<p>old</p>\n")
    call = waiting_call(
        "file_write",
        {"path": "page.html", "content": '<script>alert("x")</script>\n'},
        user=user,
        conversation=conversation,
    )
    text = logged_in(user).get(f"/approvals/{call.pk}/preview/").content.decode()
    assert "<script>alert" not in text
    assert "+&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    assert "-&lt;p&gt;old&lt;/p&gt;" in text


def test_one_approver_is_one_approval_and_the_requester_none(user, other_user, carol, conversation):
    leads = Group.objects.create(name="leads")
    leads.user_set.add(user, other_user, carol)  # alice is an approver too — of others' calls
    approver_mode("current_time", leads, needed=2)
    call = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    bob = logged_in(other_user)
    assert bob.post(f"/approvals/{call.pk}/decide/", {"decision": "approve"}).status_code == 302
    twice = bob.post(f"/approvals/{call.pk}/decide/", {"decision": "approve"})
    # The call left bob's queue; his second try is refused, and the page says why.
    assert twice.status_code == 400
    assert "you have already approved this call" in twice.content.decode()
    own = logged_in(user).post(f"/approvals/{call.pk}/decide/", {"decision": "approve"})
    assert own.status_code == 400 and "you asked for this call" in own.content.decode()
    with pytest.raises(ApprovalError, match="you have already approved"):
        toolcall_decide(user=other_user, call_id=call.pk, approve=True)
    assert ToolCallApproval.objects.filter(call=call).count() == 1
    assert ToolCall.objects.get(pk=call.pk).status == ToolCall.Status.AWAITING_APPROVAL
