"""``manage.py policy replay``: every recorded call of a period re-decided under a candidate,
with exact counts of each change, by person, group and function; and the candidate's answers
are those of the same file imported."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from platform_app.people.access import access_import
from platform_app.people.policy import candidate_access, replay_text
from tests.policy.history import CANDIDATE, HISTORY, TRANSITIONS, seed
from tools_app.models import AuditRecord
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_decide
from tools_app.services.policy import approver_names

pytestmark = [pytest.mark.django_db, pytest.mark.grants, pytest.mark.modes]


def test_the_seeded_history_is_as_the_live_policy_decides(org):
    calls = seed(org)
    assert [c.status for c in calls] == [
        "succeeded",
        "succeeded",
        "awaiting_approval",
        "denied",
        "denied",
        "succeeded",
        "awaiting_approval",
        "awaiting_approval",
        "succeeded",
        "denied",
    ]
    assert AuditRecord.objects.filter(kind="call").count() == len(HISTORY)


def test_a_replay_counts_each_change_exactly(org):
    seed(org)
    replay = replay_text(CANDIDATE, since=timezone.now() - timedelta(days=7))
    assert replay.total == len(HISTORY)
    assert replay.transitions == dict(sorted(TRANSITIONS.items()))
    assert len(replay.changed) == sum(TRANSITIONS.values())
    assert replay.by_person == {
        "alice": {"allowed→approval": 2, "approval→allowed": 1, "denied→allowed": 1},
        "bob": {"allowed→denied": 1},
        "eve": {"approval→denied": 2},
        "lee": {"allowed→approval": 1},
    }
    assert replay.by_function == {
        "current_time": {"allowed→approval": 3},
        "http_request": {"approval→allowed": 1, "approval→denied": 2},
        "shell_exec": {"denied→allowed": 1},
        "file_read": {"allowed→denied": 1},
    }
    assert replay.by_group == {  # as the groups are now; bob is in none but Everyone
        "support": {
            "allowed→approval": 2,
            "approval→allowed": 1,
            "denied→allowed": 1,
            "approval→denied": 2,
        },
        "leads": {"allowed→approval": 1},
        "Everyone": {"allowed→denied": 1},
    }
    eve = [c for c in replay.changed if c.person == "eve"]
    assert {c.reason for c in eve} == {"http_request is not granted to you — ask an admin"}
    # lee's path outside the workspace stays denied by the file policy, whoever may read.
    assert not [c for c in replay.changed if c.person == "lee" and c.tool == "file_read"]


def test_a_replay_covers_only_its_period(org):
    seed(org)
    old = AuditRecord.objects.filter(kind="call", username="eve")
    old.update(created_at=timezone.now() - timedelta(days=10))
    replay = replay_text(CANDIDATE, since=timezone.now() - timedelta(days=7))
    assert replay.total == len(HISTORY) - 2
    assert "approval→denied" not in replay.transitions


def test_the_command_prints_counts_and_json(org, tmp_path):
    seed(org)
    path = tmp_path / "candidate.yaml"
    path.write_text(CANDIDATE)
    out = io.StringIO()
    call_command("policy", "replay", str(path), "--since", "7d", stdout=out)
    text = out.getvalue()
    assert f"{len(HISTORY)} call(s) since" in text and "8 would change" in text
    assert "  approval→denied: 2" in text and "by person:" in text
    out = io.StringIO()
    call_command("policy", "replay", str(path), "--since", "7d", "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["calls"] == len(HISTORY) and data["changed"] == 8
    assert data["transitions"] == TRANSITIONS
    assert {c["person"] for c in data["calls_changed"]} == {"alice", "bob", "eve", "lee"}


def test_the_candidate_decides_as_the_same_file_imported(org):
    """The in-memory candidate and the import agree on every person and function."""
    requests = [(p, t, a) for p, t, a in HISTORY] + [
        ("bob", "shell_exec", {"command": "ls"}),
        ("lee", "http_request", {"url": "https://1.1.1.1/"}),
    ]
    candidate = candidate_access(CANDIDATE)

    def decided(access):
        out = []
        for person, tool, arguments in requests:
            decision = toolcall_decide(
                request=CallRequest(tool=tool, arguments=arguments),
                ctx=BindContext(user_id=org[person].pk, conversation_id=None, source="test"),
                **({"access": access} if access else {}),
            )
            out.append((decision.verdict, decision.reason, approver_names(decision.approval)))
        return out

    before = decided(candidate)
    access_import(CANDIDATE)
    assert decided(None) == before


def test_a_long_replay_lists_the_first_calls_and_counts_them_all(org):
    seed(org)
    replay = replay_text(CANDIDATE, since=timezone.now() - timedelta(days=7), listed=3)
    assert len(replay.changed) == 3
    assert replay.changed_count == 8 and replay.as_json()["changed"] == 8
