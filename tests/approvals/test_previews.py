"""Previews of calls waiting for approval (issue 36): what the call would do, computed from
the workspace as it is and the settings the executor would apply, never blocking a decision."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.approvals.conftest import requester_mode, waiting_call, workspace_of
from tests.tools.conftest import configure
from tools_app.registry import PREVIEWS
from tools_app.services.preview import toolcall_preview

pytestmark = pytest.mark.django_db(transaction=True)


def _kinds(preview) -> list[tuple[str, str]]:
    return [(line.kind, line.text) for line in preview.lines]


def test_it_diffs_a_write_against_the_file_as_it_is(user, conversation):
    requester_mode("file_write")
    workspace = workspace_of(conversation, user)
    (workspace / "notes.txt").write_text("one\ntwo\nthree\n")
    call = waiting_call(
        "file_write",
        {"path": "notes.txt", "content": "one\nTWO\nthree\n"},
        user=user,
        conversation=conversation,
    )
    preview = toolcall_preview(call=call)
    assert preview is not None and not preview.unavailable
    assert preview.title == "Changes to notes.txt"
    assert _kinds(preview) == [
        ("head", "--- a/notes.txt"),
        ("head", "+++ b/notes.txt"),
        ("hunk", "@@ -1,3 +1,3 @@"),
        ("same", " one"),
        ("del", "-two"),
        ("add", "+TWO"),
        ("same", " three"),
    ]
    assert (preview.added, preview.removed) == (1, 1)
    assert preview.taken_at is not None
    # The file changes before the approver looks again: the preview follows it.
    (workspace / "notes.txt").write_text("one\nTWO\nthree\n")
    again = toolcall_preview(call=call)
    assert again.lines == [] and "already has this content" in again.note
    # Append mode shows the lines added at the end.
    edited = toolcall_preview(
        call=call, arguments={"path": "notes.txt", "content": "four\n", "mode": "append"}
    )
    assert [line.text for line in edited.lines if line.kind == "add"] == ["+four"]


def test_it_shows_a_new_files_content(user, conversation):
    requester_mode("file_write")
    call = waiting_call(
        "file_write",
        {"path": "src/new.py", "content": "print('hi')\n<b>x</b>\n"},
        user=user,
        conversation=conversation,
    )
    preview = toolcall_preview(call=call)
    assert preview.title == "New file src/new.py"
    assert _kinds(preview)[:2] == [("head", "--- /dev/null"), ("head", "+++ b/src/new.py")]
    assert [t for k, t in _kinds(preview) if k == "add"] == ["+print('hi')", "+<b>x</b>"]
    assert "a new file of 21 bytes" in preview.note


def test_it_describes_a_binary_file_instead_of_diffing_it(user, conversation):
    requester_mode("file_write")
    (workspace_of(conversation, user) / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    call = waiting_call(
        "file_write", {"path": "logo.png", "content": "text"}, user=user, conversation=conversation
    )
    preview = toolcall_preview(call=call)
    assert preview.lines == []
    assert "binary (image/png, 16 bytes)" in preview.note
    assert "replaced by 4 bytes of text" in preview.note


def test_dev_write_file_gets_the_file_preview_through_its_activity(user, conversation):
    requester_mode("write_file")
    (workspace_of(conversation, user) / "a.txt").write_text("old\n")
    call = waiting_call(
        "write_file", {"path": "a.txt", "content": "new\n"}, user=user, conversation=conversation
    )
    preview = toolcall_preview(call=call)
    assert [t for k, t in _kinds(preview) if k in ("add", "del")] == ["-old", "+new"]


def test_it_reads_nothing_outside_what_the_tool_could_write(user, conversation):
    requester_mode("file_write")
    call = waiting_call(
        "file_write", {"path": "x.txt", "content": "x"}, user=user, conversation=conversation
    )
    outside = toolcall_preview(
        call=call, arguments={"path": "../../etc/passwd", "content": "root::0:0::/:/bin/sh"}
    )
    assert outside.unavailable == "policy: '../../etc/passwd' leaves the workspace"
    assert outside.lines == [] and outside.fields == []
    absolute = toolcall_preview(call=call, arguments={"path": "/etc/passwd", "content": "x"})
    assert absolute.unavailable.startswith("policy: absolute path '/etc/passwd' is outside")
    # A link in the workspace that leads out is refused, not followed.
    workspace = workspace_of(conversation, user)
    os.symlink("/etc/passwd", workspace / "passwd")
    os.symlink("/etc", workspace / "etc")
    linked = toolcall_preview(call=call, arguments={"path": "passwd", "content": "x"})
    assert linked.unavailable == "'passwd' is a symbolic link; links are not followed"
    through = toolcall_preview(call=call, arguments={"path": "etc/passwd", "content": "x"})
    assert through.unavailable == "'etc' is a symbolic link; links are not followed"
    # Bad arguments say why, and still block nothing.
    bad = toolcall_preview(call=call, arguments={"path": "x.txt"})
    assert bad.unavailable == "invalid arguments for file_write: 'content' is required"


def test_it_diffs_a_write_into_a_writable_host_folder(user, conversation):
    top = Path(tempfile.mkdtemp(prefix="cc-preview-host-", dir="/tmp"))
    try:
        (top / "drop").mkdir()
        (top / "drop" / "report.md").write_text("# Report\nold line\n")
        configure("file", host_folders=[f"drop={top / 'drop'} rw", f"ro={top} ro"])
        requester_mode("file_write")
        call = waiting_call(
            "file_write",
            {"path": "/mnt/drop/report.md", "content": "# Report\nnew line\n"},
            user=user,
            conversation=conversation,
        )
        preview = toolcall_preview(call=call)
        assert [t for k, t in _kinds(preview) if k in ("add", "del")] == ["-old line", "+new line"]
        up = toolcall_preview(call=call, arguments={"path": "/mnt/drop/../../x", "content": "x"})
        assert up.unavailable.startswith("policy: '/mnt/drop/../../x' leaves the host folder")
        read_only = toolcall_preview(call=call, arguments={"path": "/mnt/ro/x", "content": "x"})
        assert read_only.unavailable == "policy: host folder /mnt/ro is read-only"
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_it_masks_secrets_in_an_http_requests_headers_and_url(user, conversation):
    configure("http", private_allowed=["127.0.0.1"])
    requester_mode("http_request")
    call = waiting_call(
        "http_request",
        {
            "method": "POST",
            "url": "http://127.0.0.1:8080/v1/items?page=2&api_key=sk-live-123",
            "headers": {
                "Authorization": "Bearer sk-live-abcdef",
                "X-Api-Key": "k-999",
                "Cookie": "session=s3cr3t",
                "X-Trace": "visible",
            },
            "json": {"name": "widget"},
        },
        user=user,
        conversation=conversation,
    )
    preview = toolcall_preview(call=call)
    fields = dict(preview.fields)
    assert fields["method"] == "POST"
    assert fields["URL"] == "http://127.0.0.1:8080/v1/items?page=2&api_key=••••••"
    assert fields["host"] == "127.0.0.1:8080"
    headers = fields["headers"].splitlines()
    assert "Authorization: Bearer ••••••" in headers
    assert "X-Api-Key: ••••••" in headers and "Cookie: ••••••" in headers
    assert "X-Trace: visible" in headers and "Content-Type: application/json" in headers
    assert '"name": "widget"' in fields["body"]
    shown = repr(preview)
    for secret in ("sk-live-123", "sk-live-abcdef", "k-999", "s3cr3t"):
        assert secret not in shown


def test_it_shows_the_run_spec_a_container_would_get(user, conversation):
    user.is_staff = True  # the Docker tool is for admins unless opened
    user.save()
    configure(
        "docker",
        allowed_images=["busybox:*"],
        allowed_operations=["list", "inspect", "logs", "create", "start"],
        container_memory="128m",
    )
    requester_mode("container_run")
    call = waiting_call(
        "container_run",
        {"image": "busybox:1.36", "command": "sh -c 'echo hi'", "env": ["MODE=test"]},
        user=user,
        conversation=conversation,
    )
    fields = dict(toolcall_preview(call=call).fields)
    assert fields["image"] == "busybox:1.36"
    assert fields["command"] == "sh -c 'echo hi'"
    assert fields["network"] == "none"
    assert fields["mounts"] == "none: no host files or devices"
    assert fields["memory"] == "134,217,728 bytes"
    assert fields["environment"] == "MODE=test"
    assert fields["then"] == "started, left running"


def test_it_lists_the_programs_of_a_shell_line(user, conversation):
    requester_mode("shell_exec")
    call = waiting_call(
        "shell_exec",
        {"command": "ls -la | grep py; rm -rf build && echo $(whoami)"},
        user=user,
        conversation=conversation,
    )
    fields = dict(toolcall_preview(call=call).fields)
    assert fields["programs"] == "ls, grep, rm, whoami, echo"
    assert fields["working directory"] == "/workspace"
    assert fields["network"] == "none"


def test_a_failing_preview_says_so_and_blocks_nothing(user, conversation, monkeypatch):
    requester_mode("file_write")
    call = waiting_call(
        "file_write", {"path": "a.txt", "content": "x"}, user=user, conversation=conversation
    )

    def broken(args, ctx):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(PREVIEWS, "file_write", broken)
    preview = toolcall_preview(call=call)
    assert preview.unavailable == "the preview failed; the arguments above are what would run"
    # A tool without a preview has none (its arguments are what the approver reads).
    requester_mode("current_time")
    clock = waiting_call("current_time", {"timezone": "UTC"}, user=user, conversation=conversation)
    assert toolcall_preview(call=clock) is None


def test_the_approvals_page_shows_the_preview_and_follows_edits(user, other_user, conversation):
    from django.contrib.auth.models import Group
    from django.test import Client

    from tests.approvals.conftest import approver_mode

    leads = Group.objects.create(name="leads")
    leads.user_set.add(other_user)
    approver_mode("file_write", leads)
    (workspace_of(conversation, user) / "conf.ini").write_text("debug = false\n")
    call = waiting_call(
        "file_write",
        {"path": "conf.ini", "content": "debug = true\n"},
        user=user,
        conversation=conversation,
    )
    bob = Client()
    bob.force_login(other_user)
    page = bob.get("/approvals/").content.decode()
    assert '<span class="diff-line diff-del">-debug = false</span>' in page
    assert '<span class="diff-line diff-add">+debug = true</span>' in page
    assert f'hx-post="/approvals/{call.pk}/preview/"' in page  # the textarea asks again
    edited = bob.post(
        f"/approvals/{call.pk}/preview/",
        {"arguments": '{"path": "conf.ini", "content": "debug = maybe\\n"}'},
    ).content.decode()
    assert '<span class="diff-line diff-add">+debug = maybe</span>' in edited
    assert f'id="approval-preview-{call.pk}"' in edited
