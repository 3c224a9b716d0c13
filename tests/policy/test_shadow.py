"""Shadow mode: a candidate decided beside the live policy on every call — its verdict in the
call's audit record and in /metrics — and never enforced: every live outcome is the same with
and without it. Per-rule shadows (``shadow: true``) are left out of an import."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from infra.metrics import exposition
from platform_app.people.access import access_import
from platform_app.people.policy import shadow_start, shadow_status, shadow_stop
from tests.policy.history import CANDIDATE, HISTORY, TRANSITIONS, seed
from tools_app.models import AuditRecord, ShadowPolicy, ToolConfigVersion, ToolFunctionConfig

pytestmark = [pytest.mark.django_db, pytest.mark.grants, pytest.mark.modes]

OUTCOME = ("status", "policy_verdict", "policy_reason", "error", "approval_mode",
           "approver_group_ids", "approvals_needed", "result")  # fmt: skip


def outcomes(calls):
    return [tuple(getattr(c, f) for f in OUTCOME) for c in calls]


def shadow_metric(text: str, live: str, shadow: str) -> float:
    prefix = f'cc_policy_shadow_verdicts_total{{live="{live}",shadow="{shadow}"}}'
    return sum(
        float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
    )


def test_a_shadow_never_changes_a_verdict_and_is_recorded_and_counted(org):
    without = outcomes(seed(org))
    assert not AuditRecord.objects.filter(detail__has_key="shadow").exists()
    shadow = shadow_start(text=CANDIDATE, name="tighter clock", actor=org["lee"])
    before = exposition(deployment=True).decode()
    calls = seed(org)
    after = exposition(deployment=True).decode()
    assert outcomes(calls) == without  # nothing enforced

    seen = {}
    for call, (person, tool, _args) in zip(calls, HISTORY, strict=True):
        record = AuditRecord.objects.get(kind="call", tool_call=call)
        detail = record.detail["shadow"]
        assert detail["policy"] == shadow.label and detail["name"] == "tighter clock"
        assert call.shadow == detail
        seen.setdefault(f"{detail['live']}→{detail['verdict']}", []).append((person, tool))
    changed = {k: len(v) for k, v in seen.items() if k.split("→")[0] != k.split("→")[1]}
    assert changed == TRANSITIONS  # what the replay predicted, now seen live
    eve = AuditRecord.objects.filter(
        kind="call", username="eve", tool="http_request", detail__has_key="shadow"
    )
    assert {r.detail["shadow"]["reason"] for r in eve} == {
        "http_request is not granted to you — ask an admin"
    }
    for transition in ("allowed→approval", "approval→denied", "denied→denied"):
        live, verdict = transition.split("→")
        grown = shadow_metric(after, live, verdict) - shadow_metric(before, live, verdict)
        assert grown == len(seen[transition]), transition
    assert shadow_status()[1]["approval→denied"] == 2


def test_a_stopped_shadow_is_no_longer_decided(org):
    shadow_start(text=CANDIDATE, name="c", actor=None)
    token = ToolConfigVersion.objects.get().token
    stopped = shadow_stop(actor=org["lee"])
    assert stopped is not None and stopped.stopped_at is not None
    assert ToolConfigVersion.objects.get().token != token  # every process sees the stop
    calls = seed(org)
    assert all(c.shadow is None for c in calls)
    assert shadow_status() == (None, {})
    assert AuditRecord.objects.filter(kind="settings", group="policy", tool="shadow").count() == 2


def test_rules_marked_shadow_are_shadowed_alone_and_never_imported(org):
    marked = """\
approvals:
  - tool: current_time
    mode: requester
    shadow: true
  - tool: file_read
    mode: requester
"""
    summary = access_import(marked)
    assert summary.approvals == ["file_read"] and summary.shadow == ["current_time"]
    assert (
        not ToolFunctionConfig.objects.filter(name="current_time")
        .exclude(approval_mode="none")
        .exists()
    )
    ToolFunctionConfig.objects.filter(name="file_read").update(approval_mode="none")
    shadow = shadow_start(text=marked, name="marked", actor=None)
    assert shadow.rules["approvals"] == [
        {"tool": "current_time", "mode": "requester", "approvers": []}
    ]
    calls = seed(org)
    by_tool = {
        (c.tool, c.shadow["verdict"]) for c in calls if c.tool in ("current_time", "file_read")
    }
    assert by_tool == {
        ("current_time", "approval"),
        ("file_read", "allowed"),
        ("file_read", "denied"),
    }


def test_the_command_starts_reports_and_stops_a_shadow(org, tmp_path):
    path = tmp_path / "candidate.yaml"
    path.write_text(CANDIDATE)
    out = io.StringIO()
    call_command("policy", "shadow", str(path), stdout=out)
    assert "runs beside the live policy" in out.getvalue()
    assert ShadowPolicy.objects.get().name == "candidate.yaml"
    out = io.StringIO()
    call_command("policy", "status", stdout=out)
    assert "shadow candidate.yaml" in out.getvalue()
    out = io.StringIO()
    call_command("policy", "shadow", "--stop", stdout=out)
    assert "stopped candidate.yaml" in out.getvalue()


def test_a_shadow_that_breaks_changes_nothing(org, monkeypatch):
    from tools_app.services.policy import CandidateAccess

    without = outcomes(seed(org))
    shadow_start(text=CANDIDATE, name="broken", actor=None)

    def broken(self, user_id, snapshot):
        raise RuntimeError("a bug in the candidate view")

    monkeypatch.setattr(CandidateAccess, "granted", broken)
    calls = seed(org)
    assert outcomes(calls) == without
    assert all(c.shadow is None for c in calls)


def test_binding_reads_nothing_per_call_for_the_shadow(org):
    """Warm, a bind with a shadow running makes exactly the queries of one without."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.policy.history import bind

    def queries() -> int:
        bind(org, "alice", "current_time", {})  # warm the caches (a token move rebuilds them)
        with CaptureQueriesContext(connection) as captured:
            bind(org, "alice", "current_time", {})
        return len(captured)

    without = queries()
    shadow_start(text=CANDIDATE, name="c", actor=None)
    assert queries() == without


def test_the_audit_log_shows_the_shadows_verdict(org):
    from django.test import Client

    from tests.policy.history import bind

    shadow_start(text=CANDIDATE, name="no eve", actor=None)
    call = bind(org, "eve", "http_request", {"url": "https://1.1.1.1/"})
    record = AuditRecord.objects.get(kind="call", tool_call=call)
    org["lee"].is_staff = True
    org["lee"].save()
    client = Client()
    client.force_login(org["lee"])
    html = client.get(f"/tools/audit/{record.pk}/").content.decode()
    assert 'id="shadow-verdict"' in html and "not enforced" in html
    assert "http_request is not granted to you" in html
