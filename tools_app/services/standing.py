"""Standing approvals: an approval widened beyond one call.

Whoever decides a call (``approval_refusal``) may, when approving it, remember the decision:
for this conversation, for this person until a time, or (pre-approved) for a schedule's runs.
Later calls of the same function by the same person whose arguments match then run without
waiting, as approved by that grant — checked in binding (``standing_at_binding``), so on
every way in.

Matching is small and explicit, per argument: ``equals`` (exactly the same JSON value, no
normalisation: ``pytest`` and ``pytest `` differ), ``prefix`` (a workspace path: components
after ``.``/``..``/``//`` are resolved, and the real path after symlinks, both inside the
prefix — never a string prefix), ``host`` (an http(s) URL whose host and port are the
same). Every argument not named must be equal, and no argument may be added or left out.

A grant is refused for functions that need more than one approval (it would stand in for
one approver) and for functions an admin forbade it for. When used, it must still be
usable as things are now: its approver active and still allowed to decide such a call
(``approval_refusal`` again: a lost approver group, staff or tool grant voids it; an
approver-mode call is never approved by a grant its requester made).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.db.models import F, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

from infra import access
from tools_app import selectors
from tools_app.errors import PolicyDenied
from tools_app.executors.file.paths import workspace_parts
from tools_app.models import StandingApproval, ToolCall, ToolFunctionConfig
from tools_app.runtime import workspace_dir_for, workspace_id_for
from tools_app.services.approval import (
    ApprovalError,
    approval_refusal,
    toolcall_approve,
    toolcall_deny,
    toolcall_for_decision,
)
from tools_app.services.audit import audit_approval, audit_grant, audit_settings_change

KINDS = ("equals", "prefix", "host")
SCOPES = ("call", "conversation", "person")
PERSON_MAX_DAYS = 30  # the longest a "for this person" approval may stand
Scope = StandingApproval.Scope


class WideningError(ApprovalError):
    """The widening asked for cannot be granted (clear words; nothing was approved)."""


@dataclass(frozen=True)
class Widening:
    """How far an approval reaches: ``scope`` (conversation, person, schedule), ``match``
    (argument name → kind, the others equal), ``until`` (person: required)."""

    scope: str
    match: dict[str, str] = field(default_factory=dict)
    until: datetime | None = None
    within: dict[str, str] = field(default_factory=dict)  # prefix → its path, if not the value


def widening_parse(data: Any) -> Widening | None:
    """A widening as posted (``{"scope": ..., "match": {...}, "until": iso}``); None for
    "this call only"; ApprovalError with clear words for anything else."""
    if data is None or data == "" or data == {}:
        return None
    if not isinstance(data, dict):
        raise WideningError(_("the widening must be an object with a scope"))
    scope = data.get("scope", "call")
    if scope not in SCOPES:
        raise WideningError(
            _("unknown widening %(scope)s: this call, conversation or person")
            % {"scope": f"{str(scope)[:40]!r}"}
        )
    if scope == "call":
        return None
    match, within = _match_parse(data.get("match") or {})
    for name, kind in match.items():
        if kind not in KINDS:
            raise WideningError(
                _("%(name)s: unknown kind %(kind)s (equals, prefix or host)")
                % {"name": name[:64], "kind": f"{kind[:20]!r}"}
            )
    until = None
    raw = data.get("until")
    if raw:
        until = parse_datetime(str(raw)) if isinstance(raw, str) else None
        if until is None:
            raise WideningError(_("the widening's end is not a date and time"))
        if timezone.is_naive(until):
            until = timezone.make_aware(until)
    return Widening(
        scope=scope,
        match={k: v for k, v in match.items() if v != "equals"},
        until=until,
        within=within,
    )


def _match_parse(raw: Any) -> tuple[dict[str, str], dict[str, str]]:
    """``{argument: kind}`` or ``{argument: {"kind": "prefix", "value": "src"}}`` (a prefix
    other than the argument itself): (kinds, prefixes)."""
    if not isinstance(raw, dict):
        raise WideningError(_("the widening's match must map argument names to a kind"))
    kinds: dict[str, str] = {}
    within: dict[str, str] = {}
    for name, given in raw.items():
        spec, value = given, None
        if isinstance(given, dict):
            spec, value = given.get("kind"), given.get("value")
        if not isinstance(name, str) or not isinstance(spec, str):
            raise WideningError(_("the widening's match must map argument names to a kind"))
        kinds[name] = spec
        if spec == "prefix" and value not in (None, ""):
            if not isinstance(value, str):
                raise WideningError(_("%(name)s: the prefix must be a path") % {"name": name})
            within[name] = value
    return kinds, within


def widening_refusal(tool: str, *, approvals_needed: int = 1) -> str | None:
    """Why approvals of ``tool`` may not be remembered, or None."""
    if approvals_needed > 1:
        return _(
            "this function needs more than one approval: an approval of it is for one call only"
        )
    forbidden = (
        ToolFunctionConfig.objects.filter(name=tool)
        .values_list("standing_forbidden", flat=True)
        .first()
    )
    if forbidden:
        return _("an administrator allows approvals of this function for one call only")
    return None


def _check(call: ToolCall, arguments: dict[str, Any], widening: Widening) -> None:
    refusal = widening_refusal(call.tool, approvals_needed=call.approvals_needed or 1)
    if refusal is not None:
        raise WideningError(refusal)
    if call.user_id is None:
        raise WideningError(_("only a person's calls can be approved beyond this call"))
    if widening.scope == Scope.CONVERSATION and call.conversation_id is None:
        raise WideningError(_("this call belongs to no conversation"))
    if widening.scope == Scope.PERSON:
        now = timezone.now()
        if widening.until is None or widening.until <= now:
            raise WideningError(_("say until when (a time in the future)"))
        if widening.until > now + timedelta(days=PERSON_MAX_DAYS):
            raise WideningError(
                _("a standing approval lasts %(days)s days at most") % {"days": PERSON_MAX_DAYS}
            )
    for name, kind in widening.match.items():
        if name not in arguments:
            raise WideningError(_("%(name)s is not an argument of this call") % {"name": name[:64]})
        value = arguments[name]
        if kind == "prefix" and _parts(value) is None:
            raise WideningError(
                _("%(name)s: a prefix needs a path inside the workspace") % {"name": name}
            )
        if kind == "prefix" and name in widening.within:
            top = widening.within[name]
            if _parts(top) is None or not _within(value, top, call):
                raise WideningError(
                    _("%(name)s: %(value)s is not inside %(prefix)s")
                    % {"name": name, "value": f"{value!r}"[:200], "prefix": f"{top!r}"[:200]}
                )
        if kind == "host" and _host(value) is None:
            raise WideningError(_("%(name)s: a host needs an http(s) URL") % {"name": name})


def standing_grant(
    *,
    call: ToolCall,
    user: Any,
    arguments: dict[str, Any],
    widening: Widening,
    schedule: tuple[int, str] | None = None,
) -> StandingApproval:
    """Remember ``user``'s approval of ``call`` (with ``arguments`` as approved). The caller
    checked that ``user`` may decide it; The widening was checked (``_check``)."""
    grant = StandingApproval.objects.create(
        scope=widening.scope,
        granted_by=user,
        granted_by_name=getattr(user, "username", ""),
        user_id=call.user_id,  # type: ignore[misc]  # _check: a person's call
        conversation_id=call.conversation_id if widening.scope == Scope.CONVERSATION else None,
        schedule_id=schedule[0] if schedule else None,
        schedule_hash=schedule[1] if schedule else "",
        tool=call.tool,
        arguments={**arguments, **widening.within},  # a prefix stands for its argument
        match=widening.match,
        expires_at=widening.until,
        source_call=call if call.pk else None,
    )
    if call.pk:
        audit_approval(
            call=call,
            user=user,
            decision=f"standing approval #{grant.pk} granted ({widening.scope})",
            after=arguments,
            note=json.dumps({"match": widening.match}) if widening.match else "",
        )
    return grant


# The schedule a call runs for, and the hash of what it asks now (an app above registers
# it at ready(): schedules live there). None: not a schedule's run.
ScheduleOf = Callable[[ToolCall], "tuple[int, str] | None"]
_schedule_of: ScheduleOf | None = None


def schedule_of_call_set(resolve: ScheduleOf | None) -> None:
    global _schedule_of
    _schedule_of = resolve


def standing_at_binding(call: ToolCall) -> Callable[[], None] | None:
    """Binding's hook for a call about to wait: a live, matching grant whose approver may
    still decide it makes the call queued, as approved by it; returns its audit step."""
    if call.user_id is None:
        return None
    if widening_refusal(call.tool, approvals_needed=call.approvals_needed or 1) is not None:
        return None
    now = timezone.now()
    where = Q(scope=Scope.PERSON)
    if call.conversation_id is not None:
        where |= Q(scope=Scope.CONVERSATION, conversation_id=call.conversation_id)
    schedule = _schedule_of(call) if _schedule_of is not None else None
    if schedule is not None:
        where |= Q(scope=Scope.SCHEDULE, schedule_id=schedule[0], schedule_hash=schedule[1])
    candidates = (
        StandingApproval.objects.filter(user_id=call.user_id, tool=call.tool, revoked_at=None)
        .filter(Q(expires_at=None) | Q(expires_at__gt=now))
        .filter(where)
        .order_by("created_at", "pk")
    )
    for grant in candidates:
        if not arguments_match(grant, call):
            continue
        approver = _approver_now(grant, call)
        if approver is None:
            continue
        return _approve(call, grant, approver)
    return None


def _approver_now(grant: StandingApproval, call: ToolCall) -> Any:
    """The grant's approver as stored now, if they may still decide ``call``."""
    if grant.granted_by_id is None:
        return None
    approver = get_user_model().objects.filter(pk=grant.granted_by_id, is_active=True).first()
    if approver is None or approval_refusal(user=approver, call=call) is not None:
        return None
    return approver


def _approve(call: ToolCall, grant: StandingApproval, approver: Any) -> Callable[[], None]:
    words = f"approved by standing approval #{grant.pk} of {grant.granted_by_name}"
    call.status = ToolCall.Status.QUEUED
    call.decided_by = approver
    call.decision_note = words
    StandingApproval.objects.filter(pk=grant.pk).update(
        uses=F("uses") + 1, last_used_at=timezone.now()
    )

    def record() -> None:
        audit_approval(call=call, user=approver, decision=words, reason=f"standing:{grant.pk}")

    return record


def arguments_match(grant: StandingApproval, call: ToolCall) -> bool:
    """Whether ``call``'s arguments are within what ``grant`` approved."""
    mine = call.arguments if isinstance(call.arguments, dict) else {}
    approved = grant.arguments if isinstance(grant.arguments, dict) else {}
    if set(mine) != set(approved):
        return False
    match = grant.match if isinstance(grant.match, dict) else {}
    for name, value in mine.items():
        kind = match.get(name, "equals")
        if kind == "prefix":
            if not _within(value, approved[name], call):
                return False
        elif kind == "host":
            host = _host(value)
            if host is None or host != _host(approved[name]):
                return False
        elif _exact(value) != _exact(approved[name]):
            return False
    return True


def _exact(value: Any) -> str:
    # JSON text, so that 1 and true (equal in Python) are not.
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _parts(value: Any) -> list[str] | None:
    if not isinstance(value, str):
        return None
    try:
        return workspace_parts(value)
    except PolicyDenied:
        return None  # outside the workspace (a host folder, ~, an escape): no prefix


def _within(value: Any, prefix: Any, call: ToolCall) -> bool:
    """``value`` inside ``prefix`` by path components, lexically and as the real path after
    symlinks in the call's workspace (what the file tool would touch)."""
    parts, top = _parts(value), _parts(prefix)
    if parts is None or top is None or parts[: len(top)] != top:
        return False
    root = os.path.realpath(
        workspace_dir_for(
            workspace_id_for(conversation_id=call.conversation_id, user_id=call.user_id)
        )
    )
    real = os.path.realpath(os.path.join(root, *parts)) if parts else root
    real_top = os.path.realpath(os.path.join(root, *top)) if top else root
    for inner, outer in ((real, root), (real, real_top), (real_top, root)):
        if inner != outer and not inner.startswith(outer.rstrip("/") + "/"):
            return False
    return True


def _host(value: Any) -> tuple[str, int] | None:
    if not isinstance(value, str) or any(c.isspace() or c == "\\" or ord(c) < 32 for c in value):
        return None
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname.lower().rstrip("."), port or (443 if parts.scheme == "https" else 80)


def standing_visible_to(user: Any) -> QuerySet[StandingApproval]:
    """The grants this person sees: all for an admin; those they made or that are for them."""
    grants = StandingApproval.objects.select_related("user", "conversation")
    if getattr(user, "is_staff", False):
        return grants
    return grants.filter(Q(granted_by_id=user.pk) | Q(user_id=user.pk))


def standing_revoke(*, grant_id: int, user: Any) -> StandingApproval:
    """Revoke a grant: its approver or an admin (audited); ApprovalError otherwise."""
    grant = StandingApproval.objects.filter(pk=grant_id).first()
    if grant is None or not access.standing_visible(user, grant):
        raise ApprovalError(_("no such standing approval"))
    if not access.standing_revocable(user, grant):
        raise ApprovalError(_("only its approver or an administrator may revoke it"))
    if grant.revoked_at is None:
        StandingApproval.objects.filter(pk=grant.pk, revoked_at=None).update(
            revoked_at=timezone.now(), revoked_by=user
        )
        grant.refresh_from_db()
        call = grant.source_call
        if call is not None:
            audit_approval(
                call=call,
                user=user,
                decision=f"standing approval #{grant.pk} revoked",
                reason=f"standing:{grant.pk}",
            )
        else:  # a schedule's pre-approval: granted without a call
            audit_grant(
                grant=grant,
                user=user,
                group=getattr(selectors.tool_named(grant.tool), "tool_group", ""),
                decision=f"standing approval #{grant.pk} revoked",
            )
    return grant


def toolcall_approve_widened(
    *,
    call: ToolCall,
    user: Any,
    widening: Widening,
    arguments: dict[str, Any] | None = None,
    note: str = "",
) -> ToolCall:
    """Approve ``call`` (which ``user`` may decide: ``toolcall_for_decision``) and remember
    the approval as ``widening`` says. The widening is checked first: a refused one
    approves nothing."""
    _check(call, dict(call.arguments or {}) if arguments is None else arguments, widening)
    approved = toolcall_approve(call=call, user=user, arguments=arguments, note=note)
    if approved.status != ToolCall.Status.AWAITING_APPROVAL:
        standing_grant(
            call=approved, user=user, arguments=dict(approved.arguments or {}), widening=widening
        )
    return approved


def toolcall_decide_widened(
    *,
    user: Any,
    call_id: int,
    approve: bool,
    widening: Any = None,
    arguments: dict[str, Any] | None = None,
    conversation_id: int | None = None,
    note: str = "",
) -> ToolCall:
    """``toolcall_decide`` with a widening as posted (None: this call only)."""
    call = toolcall_for_decision(user=user, call_id=call_id)
    if conversation_id is not None and call.conversation_id != conversation_id:
        raise ApprovalError(_("no such tool call"))
    return toolcall_decide_on(
        call=call, user=user, approve=approve, widening=widening, arguments=arguments, note=note
    )


def toolcall_decide_on(
    *,
    call: ToolCall,
    user: Any,
    approve: bool,
    widening: Any = None,
    arguments: dict[str, Any] | None = None,
    note: str = "",
) -> ToolCall:
    """Approve (this call only, or widened as posted) or deny a call its decider was found
    for (``toolcall_for_decision``): every way a decision comes in ends here."""
    parsed = widening_parse(widening) if approve else None
    if parsed is not None:
        return toolcall_approve_widened(
            call=call, user=user, widening=parsed, arguments=arguments, note=note
        )
    if approve:
        return toolcall_approve(call=call, user=user, arguments=arguments, note=note)
    return toolcall_deny(call=call, user=user, note=note)


def kind_fits(value: Any, kind: str) -> bool:
    """Whether ``value`` can be matched by ``kind`` (for the choices offered)."""
    if kind == "prefix":
        return _parts(value) is not None and not str(value).startswith(("http:", "https:"))
    if kind == "host":
        return _host(value) is not None
    return kind == "equals"


def function_standing_set(*, user: Any, tool: str, forbidden: bool) -> None:
    """Whether approvals of ``tool`` may be remembered beyond one call (audited)."""
    config, _created = ToolFunctionConfig.objects.get_or_create(name=tool)
    if config.standing_forbidden == forbidden:
        return
    before = {"standing_forbidden": config.standing_forbidden}
    config.standing_forbidden = forbidden
    config.save(update_fields=["standing_forbidden", "updated_at"])
    audit_settings_change(
        user=user,
        group=getattr(selectors.tool_named(tool), "tool_group", ""),
        tool=tool,
        before=before,
        after={"standing_forbidden": forbidden},
    )
