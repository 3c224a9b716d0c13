"""``manage.py policy test``: cases decided by binding's own decision code, against the live
policy or a candidate file; a mismatch exits non-zero naming the case; a candidate changes
nothing in the database."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from platform_app.people.access import access_export
from tools_app.models import AuditRecord, ToolCall, ToolConfigVersion

pytestmark = [pytest.mark.django_db, pytest.mark.grants, pytest.mark.modes]

CASES = """\
cases:
  - {user: alice, call: shell_exec, arguments: {command: ls}, expect: denied, reason: not granted}
  - {user: eve, call: http_request, arguments: {url: "https://1.1.1.1/"}, expect: approval,
     approvers: [leads]}
  - {user: bob, call: file_read, arguments: {path: a.txt}, expect: allowed}
  - name: lee cannot leave the workspace
    user: lee
    call: file_read
    arguments: {path: ../../etc/passwd}
    expect: denied
    reason: "policy:"
"""

CANDIDATE = """\
groups:
  - name: support
    tools: [http_request, shell_exec]
  - name: reviewers
    members: [bob]
approvals:
  - tool: http_request
    mode: approver
    approvers: [reviewers]
  - tool: file_read
    mode: requester
"""

CANDIDATE_CASES = """\
policy: candidate.yaml
cases:
  - {user: alice, call: shell_exec, arguments: {command: ls}, expect: allowed}
  - {user: eve, call: http_request, arguments: {url: "https://1.1.1.1/"}, expect: approval,
     approvers: [reviewers]}
  - {user: bob, call: file_read, arguments: {path: a.txt}, expect: approval}
  - {user: bob, call: shell_exec, arguments: {command: ls}, expect: denied, reason: not granted}
"""


def run(path) -> tuple[str, CommandError | None]:
    out = io.StringIO()
    try:
        call_command("policy", "test", str(path), stdout=out)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def test_it_passes_on_cases_that_match_the_live_policy(org, tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(CASES)
    out, error = run(path)
    assert error is None, out
    assert out.count("\nok ") + out.startswith("ok ") == 4, out
    assert "ok    #1 alice shell_exec: denied (shell_exec is not granted to you" in out
    assert "4 passed, 0 failed" in out


def test_it_exits_non_zero_naming_the_case_that_does_not_match(org, tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(CASES.replace("expect: allowed", "expect: denied"))
    out, error = run(path)
    assert error is not None and error.returncode == 1
    assert "#3 bob file_read" in str(error)
    assert "FAIL  #3 bob file_read: expected denied, got allowed" in out
    assert "3 passed, 1 failed" in out


def test_a_wrong_approver_or_reason_is_a_mismatch(org, tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text(
        CASES.replace("approvers: [leads]", "approvers: [support]").replace(
            "reason: not granted", "reason: disabled"
        )
    )
    out, error = run(path)
    assert error is not None
    assert "approvers ['leads'], expected ['support']" in out
    assert "does not say 'disabled'" in out


def test_a_candidate_is_evaluated_and_the_live_database_is_unchanged(org, tmp_path):
    (tmp_path / "candidate.yaml").write_text(CANDIDATE)
    path = tmp_path / "cases.yaml"
    path.write_text(CANDIDATE_CASES)
    before = (
        access_export(),
        ToolConfigVersion.objects.get().token,
        AuditRecord.objects.count(),
        ToolCall.objects.count(),
    )
    out, error = run(path)
    assert error is None, out
    assert "4 passed, 0 failed" in out
    after = (
        access_export(),
        ToolConfigVersion.objects.get().token,
        AuditRecord.objects.count(),
        ToolCall.objects.count(),
    )
    assert after == before
    assert not Group.objects.filter(name="reviewers").exists()
    # And the live policy still decides as before.
    live = tmp_path / "live.yaml"
    live.write_text(CASES)
    assert run(live)[1] is None


def test_a_bad_candidate_is_a_clear_error(org, tmp_path):
    (tmp_path / "candidate.yaml").write_text("groups:\n  - name: support\n    tools: [no_such]\n")
    path = tmp_path / "cases.yaml"
    path.write_text(CANDIDATE_CASES)
    out, error = run(path)
    assert error is not None
    assert "candidate.yaml: line 3: no tool named 'no_such'" in str(error)


def test_a_case_naming_nobody_fails_with_the_reason(org, tmp_path):
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - {user: zed, call: current_time, expect: allowed}\n")
    out, error = run(path)
    assert error is not None
    assert "no user named 'zed'" in out
