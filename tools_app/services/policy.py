"""Policy as code: a candidate access policy decided beside the live one, never in its place.

A candidate is the access YAML's groups and approval rules (``platform_app.people.access``
checks the file and gives them here as ``rules``) laid over the live state the way an import
would apply them: a group the file names gets the members and grants it gives (a key left
out keeps the live value), a function it names gets that approval mode; everything else is as
stored. ``CandidateAccess`` answers binding's two policy questions from that, in memory —
nothing is written — so the same decision code (``binding.toolcall_decide``,
``binding.access_decide``) can run under it:

- ``manage.py policy test`` decides each case under the candidate;
- ``policy_replay`` re-decides every recorded call of a period under the live policy and the
  candidate (both as they stand now), and lists the calls whose verdict would change;
- the **shadow** (``ShadowPolicy``, one at a time) is decided beside the live policy at every
  bind; its verdict goes into the call's audit record and ``cc_policy_shadow_verdicts``.
  Each process keeps it in memory under the configuration token (a start or stop moves it),
  so binding reads nothing per call for it.

Why in memory rather than applying the candidate in a transaction that is rolled back: the
shadow is decided on every call, where a transaction per call is out of the question, and a
replay over days of calls would hold SQLite's one write lock (every binding waits) for as long
as it runs. ``tests/policy`` holds the candidate's answers to those of the same file imported.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth.models import Group

from tools_app import selectors
from tools_app.models import AuditRecord, ShadowPolicy, ToolCall, ToolGrant
from tools_app.services.binding import REVIEW, access_decide
from tools_app.services.decision import (
    ALLOWED,
    APPROVAL,
    DENIED,
    FAILED,
    LIVE,
    AccessView,
    Approval,
    Checks,
    Decision,
)
from tools_app.services.grants import EVERYONE, NOT_GRANTED, grants_expand, grants_of_person

_MAX_PEOPLE = 20_000


class CandidateAccess:
    """Grants and approval rules of a candidate policy laid over the live ones (read once,
    when made). ``rules``: {"groups": [{"name", "members", "groups", "functions",
    "sources"}], "approvals": [{"tool", "mode", "approvers"}]}; a list left None keeps the
    live value."""

    def __init__(self, rules: dict[str, Any], *, name: str, label: str = "") -> None:
        self.name = name
        self.label = label or name
        kinds: dict[str, dict[str, set[str]]] = {}
        for group, kind, item in ToolGrant.objects.order_by().values_list(
            "group__name", "kind", "name"
        ):
            kinds.setdefault(group, {}).setdefault(kind, set()).add(item)
        self._members: dict[str, frozenset[str]] = {}
        for entry in rules.get("groups") or []:
            given = kinds.setdefault(entry["name"], {})
            if entry.get("functions") is not None or entry.get("groups") is not None:
                given[ToolGrant.Kind.GROUP] = set(entry.get("groups") or [])
                given[ToolGrant.Kind.FUNCTION] = set(entry.get("functions") or [])
            if entry.get("sources") is not None:
                given[ToolGrant.Kind.SOURCE] = set(entry["sources"])
            if entry.get("members") is not None and entry["name"] != EVERYONE:
                self._members[entry["name"]] = frozenset(entry["members"])
        self._by_group = grants_expand(
            (group, kind, item)
            for group, by_kind in kinds.items()
            for kind, items in by_kind.items()
            for item in items
        )
        self._approvals = {rule["tool"]: rule for rule in rules.get("approvals") or []}
        self._group_ids = dict(Group.objects.values_list("name", "pk"))
        self._people: dict[int, frozenset[str] | None] = {}
        self._lock = threading.Lock()

    def granted(
        self, user_id: int | None, snapshot: selectors.ConfigSnapshot
    ) -> frozenset[str] | None:
        if user_id is None:
            return frozenset()
        with self._lock:
            if user_id in self._people:
                return self._people[user_id]

        def groups_of(username: str) -> set[str]:
            names = set(Group.objects.filter(user__pk=user_id).values_list("name", flat=True))
            names.add(EVERYONE)
            for group, members in self._members.items():
                if username in members:
                    names.add(group)
                else:
                    names.discard(group)
            return names

        granted = grants_of_person(user_id, self._by_group, groups_of)
        with self._lock:
            if len(self._people) >= _MAX_PEOPLE:
                self._people.clear()
            self._people[user_id] = granted
        return granted

    def approval(self, tool: str, snapshot: selectors.ConfigSnapshot) -> Approval:
        rule = self._approvals.get(tool)
        if rule is None:
            return LIVE.approval(tool, snapshot)
        names = tuple(sorted(rule.get("approvers") or ()))
        ids = tuple(sorted(self._group_ids[n] for n in names if n in self._group_ids))
        return Approval(rule["mode"], ids, names, snapshot.function(tool).approvals_needed)


def approver_names(approval: Approval | None) -> list[str]:
    """Who approves, by group name (the live view gives ids)."""
    if approval is None or approval.mode != "approver":
        return []
    if approval.group_names:
        return sorted(approval.group_names)
    return sorted(Group.objects.filter(pk__in=approval.group_ids).values_list("name", flat=True))


def approval_words(approval: Approval | None) -> str:
    """Who would have to approve, in words ("" when nobody)."""
    if approval is None or approval.mode == "none":
        return ""
    if approval.mode == "requester":
        return "the person confirms it"
    return "approved by " + (", ".join(approver_names(approval)) or "an administrator")


# --- the shadow, per process under the configuration token -----------------------------------
_lock = threading.Lock()
_token: str | None = None
_shadow: CandidateAccess | None = None


def shadow_access(snapshot: selectors.ConfigSnapshot) -> CandidateAccess | None:
    """The shadow policy running now (None: none), from memory while the token stands.
    Binding asks on every call (registered by ``tools_app.apps``)."""
    global _token, _shadow
    token = snapshot.token
    with _lock:
        if token is not None and token == _token:
            return _shadow
    # Read after the token: a copy may be newer than its token, never older.
    row = ShadowPolicy.objects.filter(stopped_at__isnull=True).order_by("-pk").first()
    view = CandidateAccess(row.rules, name=row.name, label=row.label) if row else None
    if token is not None:
        with _lock:
            _token, _shadow = token, view
    return view


def shadow_forget() -> None:
    """Forget the cached shadow in this process (tests)."""
    global _token
    with _lock:
        _token = None


def shadow_running() -> ShadowPolicy | None:
    return ShadowPolicy.objects.filter(stopped_at__isnull=True).order_by("-pk").first()


def shadow_counts(shadow: ShadowPolicy) -> dict[str, int]:
    """ "live→shadow" → calls, from the audit records of calls bound while it ran."""
    counts: Counter[str] = Counter()
    records = AuditRecord.objects.filter(
        kind=AuditRecord.Kind.CALL, created_at__gte=shadow.started_at
    )
    if shadow.stopped_at is not None:
        records = records.filter(created_at__lte=shadow.stopped_at)
    for detail in records.values_list("detail", flat=True).iterator():
        seen = (detail or {}).get("shadow")
        if isinstance(seen, dict) and seen.get("policy") == shadow.label:
            counts[f"{seen.get('live')}→{seen.get('verdict')}"] += 1
    return dict(sorted(counts.items()))


# --- replay -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplayedCall:
    record_id: int
    call_id: int | None
    at: str
    person: str
    tool: str
    tool_group: str
    recorded: str  # the verdict when the call was made
    live: str  # re-decided now under the live policy
    candidate: str  # re-decided now under the candidate
    reason: str  # the candidate's words

    @property
    def transition(self) -> str:
        return f"{self.live}→{self.candidate}"


@dataclass
class Replay:
    since: datetime
    total: int = 0
    transitions: dict[str, int] = field(default_factory=dict)
    by_person: dict[str, dict[str, int]] = field(default_factory=dict)
    by_group: dict[str, dict[str, int]] = field(default_factory=dict)
    by_function: dict[str, dict[str, int]] = field(default_factory=dict)
    changed: list[ReplayedCall] = field(default_factory=list)

    @property
    def changed_count(self) -> int:
        """Every call that would change (``changed`` lists at most the first few hundred)."""
        return sum(self.transitions.values())

    def as_json(self) -> dict[str, Any]:
        return {
            "since": self.since.isoformat(),
            "calls": self.total,
            "changed": self.changed_count,
            "transitions": self.transitions,
            "by_person": self.by_person,
            "by_group": self.by_group,
            "by_function": self.by_function,
            "calls_changed": [
                {
                    "record": c.record_id,
                    "call": c.call_id,
                    "at": c.at,
                    "person": c.person,
                    "function": c.tool,
                    "tool_group": c.tool_group,
                    "recorded": c.recorded,
                    "live": c.live,
                    "candidate": c.candidate,
                    "reason": c.reason,
                }
                for c in self.changed
            ],
        }


def recorded_checks(*, status: str, verdict: str, reason: str, error: str) -> tuple[str, Checks]:
    """A recorded call's verdict then, and how its steps that do not depend on who may use
    what came out. A call refused before its arguments were looked at (not granted, outside
    its scope, switched off, unknown) is taken to pass them."""
    if verdict == ALLOWED:  # its reason, if any: a guard's escalation (binding)
        return (APPROVAL if status == "awaiting_approval" or reason else ALLOWED), Checks(
            escalated=reason
        )
    then = DENIED if status == ToolCall.Status.DENIED else FAILED
    before_arguments = (
        verdict in (NOT_GRANTED, REVIEW)
        or (verdict == "denied" and not reason.startswith("policy:"))
        or (not verdict and error.startswith("unknown tool"))
    )
    if before_arguments:
        return then, Checks()
    return then, Checks(Decision(then, error or reason, verdict))


def policy_replay(candidate: AccessView, *, since: datetime, listed: int = 500) -> Replay:
    """Every call recorded since ``since``, decided now under the live policy and under
    ``candidate``: how many would change, and how (at most ``listed`` calls listed; the
    command's ``--json`` lists them all)."""
    replay = Replay(since=since)
    records = (
        AuditRecord.objects.filter(kind=AuditRecord.Kind.CALL, created_at__gte=since)
        .order_by("pk")
        .values_list(
            "pk",
            "tool_call_id",
            "created_at",
            "user_id",
            "username",
            "tool",
            "group",
            "status",
            "policy_verdict",
            "policy_reason",
            "error",
            "tool_call__scope",
            "tool_call__approval_mode",
        )
    )
    seen: set[int] = set()
    groups_of: dict[int | None, list[str]] = {}
    transitions: Counter[str] = Counter()
    with selectors.config_pinned():
        for (pk, call_id, at, user_id, person, tool, tool_group, status, verdict, reason,
             error, scope, approval_mode) in records.iterator():  # fmt: skip
            if call_id is not None:
                if call_id in seen:  # a call finished again after its record was sealed
                    continue
                seen.add(call_id)
            replay.total += 1
            then, checks = recorded_checks(
                status="awaiting_approval" if approval_mode else status,
                verdict=verdict,
                reason=reason,
                error=error,
            )
            kwargs: dict[str, Any] = {"tool": tool, "user_id": user_id, "scope": scope}
            live = access_decide(LIVE, checks=checks, **kwargs)
            new = access_decide(candidate, checks=checks, **kwargs)
            if live.verdict == new.verdict:
                continue
            row = ReplayedCall(
                pk, call_id, at.isoformat(), person, tool, tool_group, then, live.verdict,
                new.verdict, new.reason or approval_words(new.approval),
            )  # fmt: skip
            transitions[row.transition] += 1
            if user_id not in groups_of:
                groups_of[user_id] = _people_groups(user_id)
            for table, key in (
                (replay.by_person, person or "—"),
                (replay.by_function, tool),
                *((replay.by_group, g) for g in groups_of[user_id]),
            ):
                bucket = table.setdefault(key, {})
                bucket[row.transition] = bucket.get(row.transition, 0) + 1
            if len(replay.changed) < listed:
                replay.changed.append(row)
    replay.transitions = dict(sorted(transitions.items()))
    return replay


def _people_groups(user_id: int | None) -> list[str]:
    """The person's groups as they are (Everyone, which holds everyone, left out)."""
    if user_id is None:
        return ["—"]
    names = list(
        Group.objects.filter(user__pk=user_id).exclude(name=EVERYONE).values_list("name", flat=True)
    )
    return sorted(names) or [EVERYONE]
