"""Pre-approved schedules: an approver says once which calls a schedule's unattended runs
may make. Each is a standing approval of scope "schedule" (services/standing.py), bound to
the schedule's id and to a hash of what the schedule asks (its message, agent, owner: the
app above that owns schedules computes it), matched at binding like any other grant.

Who may pre-approve is who may decide such a call of the schedule's owner now
(``approval_refusal`` on the call the schedule would make): in approver mode an approver of
the function, never the owner; in requester mode the owner. Checked again at each use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from pydantic import ValidationError

from tools_app import selectors
from tools_app.models import StandingApproval, ToolCall
from tools_app.services.approval import approval_refusal
from tools_app.services.audit import audit_grant
from tools_app.services.binding import format_validation_error
from tools_app.services.standing import KINDS, WideningError, kind_fits, widening_refusal

MAX_PER_REQUEST = 20


@dataclass(frozen=True)
class Preapproval:
    """One function a schedule's runs may call without waiting: its arguments (a prefix or a
    URL where ``match`` says so) and the constraint per argument (equals when not named)."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    match: dict[str, str] = field(default_factory=dict)
    until: datetime | None = None


def preapprovals_parse(data: Any) -> list[Preapproval]:
    """``[{"tool": ..., "arguments": {...}, "match": {name: kind}, "until": iso}]`` as posted;
    WideningError with clear words for anything else."""
    if data is None:
        return []
    if not isinstance(data, list):
        raise WideningError(_("pre-approvals must be a list of functions with their arguments"))
    if len(data) > MAX_PER_REQUEST:
        raise WideningError(_("at most %(n)s pre-approvals at a time") % {"n": MAX_PER_REQUEST})
    parsed = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise WideningError(_("each pre-approval names a function (tool)"))
        arguments = item.get("arguments") or {}
        match = item.get("match") or {}
        if not isinstance(arguments, dict):
            raise WideningError(_("a pre-approval's arguments must be an object"))
        if not isinstance(match, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in match.items()
        ):
            raise WideningError(_("the widening's match must map argument names to a kind"))
        until = None
        raw = item.get("until")
        if raw:
            until = parse_datetime(raw) if isinstance(raw, str) else None
            if until is None:
                raise WideningError(_("the widening's end is not a date and time"))
            if timezone.is_naive(until):
                until = timezone.make_aware(until)
        parsed.append(
            Preapproval(
                tool=item["tool"][:64],
                arguments=arguments,
                match={k: v for k, v in match.items() if v != "equals"},
                until=until,
            )
        )
    return parsed


def preapproval_check(*, approver: Any, owner_id: int, item: Preapproval) -> Preapproval:
    """``item`` as it would be granted (arguments as binding stores them), if ``approver``
    may pre-approve it for ``owner_id``'s calls; WideningError with clear words otherwise."""
    tool = selectors.tool_named(item.tool)
    if tool is None:
        raise WideningError(_("there is no function named %(tool)s") % {"tool": item.tool})
    state = selectors.tool_state(tool)
    if not state.requires_approval:
        raise WideningError(
            _("%(tool)s runs without approval: there is nothing to pre-approve")
            % {"tool": tool.tool_name}
        )
    needed = state.approvals_needed if state.approval_mode == "approver" else 1
    refusal = widening_refusal(tool.tool_name, approvals_needed=needed)
    if refusal is None:
        # The call the schedule would make, as binding would store it: who may decide it.
        would = ToolCall(
            user_id=owner_id,
            tool=tool.tool_name,
            approval_mode=state.approval_mode,
            approver_group_ids=list(state.approver_group_ids),
            approvals_needed=needed,
        )
        # The approver as stored now (a session may outlive a lost group or staff).
        uid = getattr(approver, "pk", None)
        stored = get_user_model().objects.filter(pk=uid).first() if uid is not None else None
        refusal = approval_refusal(user=stored, call=would)
        if refusal == "no such tool call":  # someone else's confirm step
            refusal = _("only %(owner)s may approve their own calls of %(tool)s") % {
                "owner": _owner_name(owner_id),
                "tool": tool.tool_name,
            }
    if refusal is not None:
        raise WideningError(refusal)
    try:
        validated = tool.model_validate(item.arguments)
    except ValidationError as exc:
        raise WideningError(format_validation_error(tool.tool_name, exc)) from None
    arguments = validated.model_dump(mode="json", exclude_unset=True, by_alias=True)
    for name, kind in item.match.items():
        if kind not in KINDS:
            raise WideningError(
                _("%(name)s: unknown kind %(kind)s (equals, prefix or host)")
                % {"name": name[:64], "kind": f"{kind[:20]!r}"}
            )
        if name not in arguments:
            raise WideningError(_("%(name)s is not an argument of this call") % {"name": name[:64]})
        if kind == "prefix" and not kind_fits(arguments[name], kind):
            raise WideningError(
                _("%(name)s: a prefix needs a path inside the workspace") % {"name": name}
            )
        if kind == "host" and not kind_fits(arguments[name], kind):
            raise WideningError(_("%(name)s: a host needs an http(s) URL") % {"name": name})
    if item.until is not None and item.until <= timezone.now():
        raise WideningError(_("say until when (a time in the future)"))
    return Preapproval(tool=tool.tool_name, arguments=arguments, match=item.match, until=item.until)


def _owner_name(owner_id: int) -> str:
    return str(
        get_user_model().objects.filter(pk=owner_id).values_list("username", flat=True).first()
        or owner_id
    )


def schedule_preapprove(
    *, approver: Any, owner_id: int, schedule: tuple[int, str], items: list[Preapproval]
) -> list[StandingApproval]:
    """Grant each of ``items`` for the runs of ``schedule`` (its id and hash now), all or
    none: every item is checked before any is stored. Audited."""
    checked = [preapproval_check(approver=approver, owner_id=owner_id, item=i) for i in items]
    grants = []
    with transaction.atomic():
        for item in checked:
            grant = StandingApproval.objects.create(
                scope=StandingApproval.Scope.SCHEDULE,
                granted_by=approver,
                granted_by_name=getattr(approver, "username", ""),
                user_id=owner_id,
                schedule_id=schedule[0],
                schedule_hash=schedule[1],
                tool=item.tool,
                arguments=item.arguments,
                match=item.match,
                expires_at=item.until,
            )
            audit_grant(
                grant=grant,
                user=approver,
                group=getattr(selectors.tool_named(item.tool), "tool_group", ""),
                decision=f"standing approval #{grant.pk} granted",
            )
            grants.append(grant)
    return grants


def schedule_preapprovals(schedule_id: int) -> list[StandingApproval]:
    """The pre-approvals of a schedule, newest first (revoked ones included)."""
    return list(
        StandingApproval.objects.filter(
            scope=StandingApproval.Scope.SCHEDULE, schedule_id=schedule_id
        )
    )


def schedule_preapprovals_void(schedule_id: int) -> int:
    """A schedule was deleted: its pre-approvals are revoked (kept for the audit)."""
    return StandingApproval.objects.filter(
        scope=StandingApproval.Scope.SCHEDULE, schedule_id=schedule_id, revoked_at=None
    ).update(revoked_at=timezone.now())
