"""Policy as code (issue 37): test a candidate access policy, replay recorded calls under it,
run it as a shadow beside the live one, apply it.

A candidate is an access YAML (``platform_app.people.access``), checked by the same code an
import uses (``access_plan``) and decided by binding's own decision code under an in-memory
view of it (``tools_app.services.policy.CandidateAccess``): nothing here writes to the live
policy except ``policy_apply``, which is the import itself.

Test cases (``manage.py policy test FILE``)::

    policy: candidate.yaml      # optional: the candidate (a path beside this file, or inline)
    cases:
      - {user: alice, call: shell_exec, arguments: {command: ls}, expect: denied,
         reason: not granted}
      - {user: eve, call: http_request, arguments: {url: "https://example.com"},
         expect: approval, approvers: [leads]}
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from platform_app.people.access import (
    AccessImportError,
    ImportSummary,
    access_export,
    access_import,
    access_plan,
    access_rules,
)
from tools_app.models import ShadowPolicy
from tools_app.runtime import BindContext
from tools_app.services.audit import audit_settings_change
from tools_app.services.binding import CallRequest, toolcall_decide
from tools_app.services.decision import LIVE, VERDICTS, AccessView, Decision
from tools_app.services.policy import (
    CandidateAccess,
    Replay,
    approver_names,
    policy_replay,
    shadow_counts,
    shadow_running,
)

MAX_POLICY_CHARS = 512_000  # a candidate as pasted or uploaded
_CASE_KEYS = {"name", "user", "call", "arguments", "expect", "reason", "approvers"}


class PolicyError(ValueError):
    """A file that cannot be used, with the sentence to show; nothing was changed."""


def policy_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def candidate_access(
    text: str, *, name: str = "candidate", shadow_only: bool = False
) -> CandidateAccess:
    """The candidate policy of an access YAML, checked as an import checks it (PolicyError
    names the line of the first problem)."""
    if len(text) > MAX_POLICY_CHARS:
        raise PolicyError(
            _("the policy is too long (at most %(n)d characters)") % {"n": MAX_POLICY_CHARS}
        )
    try:
        plan = access_plan(text)
    except AccessImportError as exc:
        raise PolicyError(str(exc)) from exc
    rules = access_rules(plan, shadow_only=shadow_only and plan.has_shadow_rules)
    return CandidateAccess(rules, name=name, label=policy_digest(text)[:16])


# --- test cases ---------------------------------------------------------------------------
@dataclass
class CaseResult:
    number: int
    label: str
    expected: str
    decision: Decision | None
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        got = self.decision.verdict if self.decision else "—"
        why = f" ({self.decision.reason})" if self.decision and self.decision.reason else ""
        if self.ok:
            return f"ok    #{self.number} {self.label}: {got}{why}"
        return f"FAIL  #{self.number} {self.label}: {'; '.join(self.problems)}"


def _case_label(case: dict[str, Any], number: int) -> str:
    if case.get("name"):
        return str(case["name"])
    return f"{case.get('user')} {case.get('call')}"


def _load_cases(text: str, base: Path | None) -> tuple[AccessView, list[Any]]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PolicyError(_("not valid YAML: %(error)s") % {"error": exc}) from exc
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise PolicyError(_("expected a mapping with a list of 'cases'"))
    unknown = sorted(set(data) - {"policy", "cases"})
    if unknown:
        raise PolicyError(_("unknown key %(key)s") % {"key": repr(unknown[0])})
    source = data.get("policy")
    if source is None:
        return LIVE, data["cases"]
    if isinstance(source, dict):  # inline
        return candidate_access(yaml.safe_dump(source), name="inline"), data["cases"]
    if not isinstance(source, str) or not source.strip():
        raise PolicyError(_("'policy' must name a file or hold the policy itself"))
    path = Path(source)
    if not path.is_absolute() and base is not None:
        path = base / path
    try:
        policy_text = path.read_text()
    except OSError as exc:
        raise PolicyError(
            _("cannot read the policy %(path)s: %(error)s") % {"path": path, "error": exc.strerror}
        ) from exc
    try:
        return candidate_access(policy_text, name=path.name), data["cases"]
    except PolicyError as exc:
        raise PolicyError(f"{path}: {exc}") from exc


def _check_case(case: Any, number: int) -> list[str]:
    if not isinstance(case, dict):
        return [_("a case must be a mapping with user, call and expect")]
    problems = []
    unknown = sorted(set(case) - _CASE_KEYS)
    if unknown:
        problems.append(_("unknown key %(key)s") % {"key": repr(unknown[0])})
    for key in ("user", "call", "expect"):
        if not isinstance(case.get(key), str) or not case[key]:
            problems.append(_("%(key)s is missing") % {"key": key})
    if case.get("expect") not in (None, *VERDICTS):
        problems.append(_("expect must be one of %(verdicts)s") % {"verdicts": ", ".join(VERDICTS)})
    if not isinstance(case.get("arguments", {}), dict):
        problems.append(_("arguments must be a mapping"))
    if not isinstance(case.get("approvers", []), list):
        problems.append(_("approvers must be a list of group names"))
    return problems


def policy_test(text: str, *, base: Path | None = None) -> list[CaseResult]:
    """Decide each case as binding would (under the file's candidate, or the live policy)
    and compare: the verdict, the reason (words it must contain) and the approver groups."""
    access, cases = _load_cases(text, base)
    users = get_user_model().objects
    results = []
    for number, case in enumerate(cases, start=1):
        problems = _check_case(case, number)
        label = _case_label(case, number) if isinstance(case, dict) else f"case {number}"
        if problems:
            results.append(CaseResult(number, label, "", None, problems))
            continue
        user = users.filter(username=case["user"]).first()
        if user is None:
            results.append(
                CaseResult(
                    number,
                    label,
                    case["expect"],
                    None,
                    [_("no user named %(name)s") % {"name": repr(case["user"])}],
                )
            )
            continue
        decision = toolcall_decide(
            request=CallRequest(tool=case["call"], arguments=case.get("arguments") or {}),
            ctx=BindContext(user_id=user.pk, conversation_id=None, source="test"),
            access=access,
        )
        result = CaseResult(number, label, case["expect"], decision)
        if decision.verdict != case["expect"]:
            result.problems.append(
                f"expected {case['expect']}, got {decision.verdict}"
                + (f" ({decision.reason})" if decision.reason else "")
            )
        wanted_reason = case.get("reason")
        if wanted_reason and str(wanted_reason).casefold() not in decision.reason.casefold():
            result.problems.append(f"reason {decision.reason!r} does not say {wanted_reason!r}")
        if "approvers" in case:
            got = approver_names(decision.approval)
            if sorted(map(str, case["approvers"])) != got:
                result.problems.append(f"approvers {got}, expected {sorted(case['approvers'])}")
        results.append(result)
    return results


# --- replay -------------------------------------------------------------------------------
_SINCE = re.compile(r"^\s*(\d+)\s*([dhm])\s*$")


def since_parse(text: str) -> datetime:
    """``7d``, ``24h``, ``30m`` ago, or a date and time."""
    match = _SINCE.match(text or "")
    if match:
        unit = {"d": "days", "h": "hours", "m": "minutes"}[match[2]]
        return timezone.now() - timedelta(**{unit: int(match[1])})
    when = parse_datetime(text or "")
    if when is None:
        raise PolicyError(_("since: a period such as 7d, 24h or 30m, or a date and time"))
    return when if timezone.is_aware(when) else timezone.make_aware(when)


def replay_text(text: str, *, since: datetime, listed: int = 500) -> Replay:
    return policy_replay(candidate_access(text), since=since, listed=listed)


# --- shadow and apply ---------------------------------------------------------------------
def shadow_start(*, text: str, name: str, actor: Any) -> ShadowPolicy:
    """Run ``text`` as the shadow policy (its entries marked ``shadow: true``, or all of it
    when none is marked), in place of any shadow running. Audited as a settings change."""
    candidate_access(text)  # checked as an import checks it
    plan = access_plan(text)
    rules = access_rules(plan, shadow_only=plan.has_shadow_rules)
    name = (name or "").strip()[:200] or _("candidate")
    with transaction.atomic():
        stopped = _stop_running()
        shadow = ShadowPolicy.objects.create(
            name=name, digest=policy_digest(text), text=text, rules=rules, started_by=actor
        )
        audit_settings_change(
            user=actor,
            group="policy",
            tool="shadow",
            before={"shadow": stopped.name if stopped else None},
            after={
                "shadow": name,
                "digest": shadow.digest,
                "rules": "marked shadow: true" if plan.has_shadow_rules else "whole file",
            },
        )
    return shadow


def _stop_running() -> ShadowPolicy | None:
    running = None
    for shadow in ShadowPolicy.objects.select_for_update().filter(stopped_at__isnull=True):
        shadow.stopped_at = timezone.now()
        shadow.save(update_fields=["stopped_at"])  # a save: the token moves on
        running = shadow
    return running


def shadow_stop(*, actor: Any) -> ShadowPolicy | None:
    with transaction.atomic():
        stopped = _stop_running()
        if stopped is not None:
            audit_settings_change(
                user=actor,
                group="policy",
                tool="shadow",
                before={"shadow": stopped.name, "digest": stopped.digest},
                after={"shadow": None},
            )
    return stopped


def shadow_status() -> tuple[ShadowPolicy | None, dict[str, int]]:
    shadow = shadow_running()
    return shadow, (shadow_counts(shadow) if shadow else {})


def policy_apply(*, text: str, actor: Any) -> ImportSummary:
    """Apply the candidate (the access import: all or nothing), audited as a settings
    change with the policy before and after."""
    if len(text) > MAX_POLICY_CHARS:
        raise PolicyError(
            _("the policy is too long (at most %(n)d characters)") % {"n": MAX_POLICY_CHARS}
        )
    with transaction.atomic():
        before = access_export()
        try:
            summary = access_import(text, actor=actor)
        except AccessImportError as exc:
            raise PolicyError(str(exc)) from exc
        audit_settings_change(
            user=actor,
            group="policy",
            tool="access",
            before={"policy": before},
            after={"policy": access_export(), "digest": policy_digest(text)},
        )
    return summary
