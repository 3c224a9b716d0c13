"""Approval of calls to functions an admin set to an approval mode.

Who decides (``approval_refusal``, the one rule every path uses — the chat's and the Tools
Manager's websockets, the tokens page, the Approvals page):

- requester mode: the person who asked (a confirm step);
- approver mode: a member of one of the function's approver groups (the implicit "Everyone"
  group counts for every user), or, when the function names no group, an admin — and never
  the person who asked, whatever else they are.

A refused decision is recorded in the audit log with its reason and changes nothing.

A call may wait up to APPROVAL_TIMEOUT_MINUTES, so a decision checks again what binding
checked when the call was made, as things are now (``call_voided``): a call past its deadline,
whose requester is no longer active or granted the tool (or whose tool is gone or switched
off) is denied with that reason, whoever decides and however — the decision is refused with
the same words. The decider is read again as stored too: a websocket keeps the user it
connected as.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _
from pydantic import ValidationError

from infra.prepared import Prepared
from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolError
from tools_app.events import toolcall_publish
from tools_app.guards import guard_arguments
from tools_app.models import ToolCall, ToolCallApproval, ToolFunctionConfig
from tools_app.runtime import BindContext
from tools_app.services.audit import audit_approval, audit_call
from tools_app.services.binding import (
    format_validation_error,
    toolcall_dispatch,
    toolcall_refusal_now,
)
from tools_app.services.execution import toolcall_finish
from tools_app.services.grants import person_group_ids
from tools_app.signals import approval_decided, notify

logger = logging.getLogger(__name__)


class ApprovalError(ToolError):
    """The decision cannot be applied (clear words for the person deciding)."""


class AlreadyApproved(ApprovalError):
    """This person's approval of a call that needs several is counted already."""


def _revalidate(call: ToolCall, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = selectors.tool_named(call.tool)
    if tool is None:
        raise ApprovalError(_("tool %(tool)s no longer exists") % {"tool": f"{call.tool!r}"})
    try:
        validated = tool.model_validate(arguments)
    except ValidationError as exc:
        raise ApprovalError(format_validation_error(call.tool, exc)) from None
    ctx = BindContext(
        user_id=call.user_id,
        conversation_id=call.conversation_id,
        source=call.source,
        scope=call.scope,
    )
    settings = selectors.group_settings(call.group)
    try:
        validated.check_policy(settings, ctx)
    except PolicyDenied as exc:
        raise ApprovalError(_("policy: %(reason)s") % {"reason": exc.reason}) from None
    edited = validated.model_dump(mode="json", exclude_unset=True, by_alias=True)
    if edited == call.arguments:
        return edited
    # An edit goes through the argument guards as a new call would: what the group blocks
    # refuses it, what it redacts is redacted, its filter webhook decides again. What would
    # only ask a person is asked of this one, who is deciding now.
    probe = ToolCall(
        pk=call.pk,
        tool=call.tool,
        group=call.group,
        user_id=call.user_id,
        conversation_id=call.conversation_id,
        turn_id=call.turn_id,
        source=call.source,
        arguments=edited,
        guards=[],
    )
    try:
        guard_arguments(call=probe, tool=tool, validated=validated, settings=settings, ctx=ctx)
    except PolicyDenied as exc:
        raise ApprovalError(exc.reason) from None
    return dict(probe.arguments or {})


REQUESTER_INACTIVE = "the person who asked for this call is no longer active"


def approval_expired_reason() -> str:
    """The words a call past its approval deadline is denied with (the sweep's and a late
    decision's)."""
    return f"approval expired after {settings.APPROVAL_TIMEOUT_MINUTES} min"


def approval_expired(call: ToolCall) -> bool:
    return timezone.now() > approval_deadline(call)


def no_longer_waiting(call: ToolCall) -> ApprovalError:
    """The refusal for a decision on a call that is no longer waiting, naming what happened
    to it when that is known (an expiry or a denial by someone else)."""
    current = ToolCall.objects.filter(pk=call.pk).values_list("status", "error").first()
    if current and current[0] == ToolCall.Status.DENIED and current[1]:
        return ApprovalError(
            _("this call is no longer awaiting approval: %(outcome)s") % {"outcome": current[1]}
        )
    return ApprovalError(_("this call is no longer awaiting approval"))


def call_voided(call: ToolCall) -> tuple[str, str] | None:
    """Why a waiting call may no longer be approved, whoever approves it: (decision, reason),
    or None. Past its deadline ("expired"); its requester deactivated, deleted or no longer
    granted the tool ("not_granted"); or refused by binding now for another reason (the
    tool gone or switched off: its verdict)."""
    if approval_expired(call):
        return "expired", approval_expired_reason()
    active = (
        get_user_model().objects.filter(pk=call.user_id).values_list("is_active", flat=True).first()
        if call.user_id is not None
        else None
    )
    if not active:
        return "not_granted", REQUESTER_INACTIVE
    refusal = toolcall_refusal_now(call)
    if refusal is not None:
        error, verdict = refusal
        return verdict, error
    return None


def _void(call: ToolCall, *, user: Any, decision: str, reason: str) -> ApprovalError:
    """Deny ``call`` for ``reason`` (an expiry as the sweep does, by nobody); the error that
    tells the decider why their decision did not apply."""
    who = None if decision == "expired" else user
    verdict = "denied" if decision == "expired" else decision
    try:
        _deny(
            call,
            user=who,
            error=reason,
            note="",
            decision=decision,
            verdict=verdict,
            reason=reason,
        )
    except ApprovalError as meanwhile:
        return meanwhile  # decided or expired meanwhile: says which
    return ApprovalError(_("this call was denied: %(reason)s") % {"reason": reason})


def toolcall_approve(
    *, call: ToolCall, user: Any, arguments: dict[str, Any] | None = None, note: str = ""
) -> ToolCall:
    """Approve a waiting call, optionally with edited arguments (validated and checked again).
    A call that may no longer run (``call_voided``) is denied instead, and ApprovalError says
    why. A call that needs several approvers (``approvals_needed``) runs with the last of
    them; until then each approval is recorded and the call keeps waiting."""
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        raise no_longer_waiting(call)
    voided = call_voided(call)
    if voided is not None:
        decision, reason = voided
        raise _void(call, user=user, decision=decision, reason=reason)
    before = call.arguments
    new_arguments = before if arguments is None else _revalidate(call, arguments)
    note = note.strip()[:NOTE_MAX]
    # One transaction: nobody sees the call queued before a receiver had its say (a worker
    # or the redelivery pass would run a clarification the chat is about to hold).
    with transaction.atomic():
        # The row lock is where two approvers deciding at once meet: the second waits for
        # the first's commit, then counts with its approval in (on SQLite every write
        # transaction is IMMEDIATE: writers queue the same way).
        locked = (
            ToolCall.objects.select_for_update()
            .filter(pk=call.pk, status=ToolCall.Status.AWAITING_APPROVAL)
            .first()
        )
        if locked is None:
            raise ApprovalError(_("this call was decided or cancelled meanwhile"))
        count, needed = _approval_counted(
            locked, user=user, seen=before, after=new_arguments, note=note
        )
        edited = new_arguments != before
        decision = "approved with edited arguments" if edited else "approved"
        if needed > 1:
            decision += f" ({count} of {needed})"
        if count < needed:
            _arguments_store(locked, new_arguments, edited=edited)
            audit_approval(
                call=locked,
                user=user,
                decision=decision,
                before=before,
                after=new_arguments,
                note=note,
                approvals=approvals_summary(locked, needed=needed),
            )
            transaction.on_commit(partial(toolcall_publish, locked))
            return locked
        moved = ToolCall.objects.filter(
            pk=call.pk, status=ToolCall.Status.AWAITING_APPROVAL
        ).update(
            status=ToolCall.Status.QUEUED,
            arguments=new_arguments,
            raw_arguments=json.dumps(new_arguments, ensure_ascii=False),
            decided_by=user if getattr(user, "pk", None) else None,
            decision_note=note,
            version=F("version") + 1,
        )
        if not moved:
            raise ApprovalError(_("this call was decided or cancelled meanwhile"))
        call.refresh_from_db()
        held = _held(call)
        audit_approval(
            call=call,
            user=user,
            decision=decision,
            before=before,
            after=new_arguments,
            note=call.decision_note,
            approvals=approvals_summary(call, needed=needed) if needed > 1 else None,
        )
        audit_call(call)
    toolcall_publish(call)
    if not held:
        toolcall_dispatch(call)
    notify(approval_decided, call=call, decision=decision)
    return call


def _approval_counted(
    call: ToolCall, *, user: Any, seen: Any, after: Any, note: str
) -> tuple[int, int]:
    """Record ``user``'s approval of the locked ``call``: (approvals now, approvals needed).
    A call that needs one is not recorded here (its decision is the call's own fields)."""
    needed = (
        call.approvals_needed
        if call.approval_mode == ToolFunctionConfig.ApprovalMode.APPROVER
        else 1
    )
    needed = max(1, needed or 1)
    if needed == 1:
        return 1, 1
    if call.arguments != seen:
        # Another approver edited them since this person looked: they approved something
        # else. Say so rather than count an approval of arguments they never saw.
        raise ApprovalError(
            _("another approver edited the arguments meanwhile: look at them again")
        )
    uid = getattr(user, "pk", None)
    if after != call.arguments:
        # Edited arguments are new arguments: earlier approvals were of the old ones.
        ToolCallApproval.objects.filter(call=call).delete()
    elif uid is not None and ToolCallApproval.objects.filter(call=call, user_id=uid).exists():
        raise AlreadyApproved(_("you have already approved this call; it needs another approver"))
    ToolCallApproval.objects.create(
        call=call, user=user if uid else None, username=getattr(user, "username", ""), note=note
    )
    return ToolCallApproval.objects.filter(call=call).count(), needed


def _arguments_store(call: ToolCall, arguments: Any, *, edited: bool) -> None:
    """A partial approval: the (maybe edited) arguments stored, the card's version moved on."""
    fields: dict[str, Any] = {"version": F("version") + 1}
    if edited:
        fields["arguments"] = arguments
        fields["raw_arguments"] = json.dumps(arguments, ensure_ascii=False)
    ToolCall.objects.filter(pk=call.pk).update(**fields)
    call.refresh_from_db()


def approvals_summary(call: ToolCall, *, needed: int | None = None) -> dict[str, Any]:
    """{"count", "needed", "by"}: who approved a call that needs several, so far."""
    by = list(call.approvals.order_by("created_at", "pk").values_list("username", flat=True))
    return {"count": len(by), "needed": needed or call.approvals_needed, "by": by}


# Who may take an approved call over instead of it being sent to a worker (the chat: a
# clarification waits for the person's answer). Set at ready() by the layer above.
_hold: Callable[[ToolCall], bool] | None = None


def approved_call_hold_set(hold: Callable[[ToolCall], bool] | None) -> None:
    """``hold(call)`` returns True when it took the approved call over (it is not sent)."""
    global _hold
    _hold = hold


def _held(call: ToolCall) -> bool:
    """Whether the hold took the call over; one that fails does not (the call is then sent as
    any other)."""
    if _hold is None:
        return False
    try:
        return _hold(call) is True
    except Exception:
        logger.exception("call %s: holding the approved call failed", call.pk)
        return False


def toolcall_deny(*, call: ToolCall, user: Any, note: str = "") -> ToolCall:
    """Deny a waiting call. One past its deadline is denied as expired (as the sweep would
    have), and ApprovalError says so."""
    if call.status == ToolCall.Status.AWAITING_APPROVAL and approval_expired(call):
        raise _void(call, user=user, decision="expired", reason=approval_expired_reason())
    who = getattr(user, "username", "") or "a reviewer"
    note = note.strip()[:NOTE_MAX]
    error = f"denied by {who} (approval required)" + (f": {note}" if note else "")
    return _deny(call, user=user, error=error, note=note, decision="denied")


def _deny(
    call: ToolCall,
    *,
    user: Any,
    error: str,
    note: str,
    decision: str,
    verdict: str = "denied",
    reason: str = "",
) -> ToolCall:
    """Deny a waiting call: its result says ``error``; the approval's audit record names the
    ``decision`` and the ``reason`` when it was not a person's choice."""
    # Who and why first, so the card published by the finish shows them.
    ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.AWAITING_APPROVAL).update(
        decided_by=user if getattr(user, "pk", None) else None, decision_note=note
    )
    if not toolcall_finish(
        call,
        status=ToolCall.Status.DENIED,
        result={"success": False, "error": error},
        error=error,
        duration_ms=0,
        only_if=ToolCall.Status.AWAITING_APPROVAL,
    ):
        raise no_longer_waiting(call)
    ToolCall.objects.filter(pk=call.pk).update(policy_verdict=verdict, policy_reason=error)
    audit_approval(call=call, user=user, decision=decision, note=note, reason=reason)
    notify(approval_decided, call=call, decision=decision)
    return call


NOTE_MAX = 2000


def decider_group_ids(user: Any) -> set[int]:
    """The ids of the groups whose approvals this person may decide: their own, Everyone's."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return set()
    return set(person_group_ids(user.pk))  # read once per configuration token where pinned


def approval_refusal(*, user: Any, call: ToolCall, group_ids: set[int] | None = None) -> str | None:
    """Why this person may not decide this call, or None if they may (see the module's
    docstring). ``group_ids``: ``decider_group_ids(user)``, when the caller has it."""
    uid = getattr(user, "pk", None)
    if uid is None or not getattr(user, "is_active", False):
        return "sign in to decide approvals"
    if call.approval_mode == ToolFunctionConfig.ApprovalMode.APPROVER:
        if call.user_id == uid:
            return (
                f"you asked for this call: it must be approved by {call.approvers_label}, "
                "not by you"
            )
        wanted = set(call.approver_group_ids or [])
        if not wanted:
            if getattr(user, "is_staff", False):
                return None
            return "only an administrator may decide this call"
        mine = decider_group_ids(user) if group_ids is None else group_ids
        if wanted & mine:
            return None
        return f"only an approver ({call.approvers_label}) may decide this call"
    # Requester mode (and calls stored before modes existed): the person who asked.
    requester = call.user_id
    if requester is None and call.conversation is not None:
        requester = call.conversation.owner_id
    if requester == uid:
        return None
    return "no such tool call"  # someone else's confirm step: not even a hint it exists


def _as_stored(user: Any) -> Any:
    """The person as stored now (None if deleted): a websocket keeps the user it connected
    as, who may have been deactivated, left a group or lost staff since."""
    uid = getattr(user, "pk", None)
    if uid is None:
        return user
    return get_user_model().objects.filter(pk=uid).first()


def toolcall_for_decision(*, user: Any, call_id: int) -> ToolCall:
    """The call, if this person — as stored now — may decide it; otherwise ApprovalError,
    recorded in the audit log (a call that does not exist is not)."""
    call = ToolCall.objects.select_related("conversation").filter(pk=call_id).first()
    if call is None:
        raise ApprovalError(_("no such tool call"))
    user = _as_stored(user)
    refusal = approval_refusal(user=user, call=call)
    if refusal is not None:
        audit_approval(
            call=call,
            user=user if getattr(user, "pk", None) else None,
            decision="refused",
            reason=refusal,
        )
        raise ApprovalError(refusal)
    return call


def toolcall_for_preview(*, user: Any, call_id: int) -> ToolCall:
    """The call, if it waits for approval and this person — as stored now — may decide it:
    a preview shows what the call would touch (a file's content), so it is for the deciders
    only, by the same rule. Otherwise ApprovalError ("no such tool call" when the person may
    not even know it exists). Not audited: the page asks again as the arguments are edited."""
    call = ToolCall.objects.select_related("conversation").filter(pk=call_id).first()
    if call is None:
        raise ApprovalError(_("no such tool call"))
    user = _as_stored(user)
    refusal = approval_refusal(user=user, call=call)
    if refusal is not None:
        raise ApprovalError(refusal)
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        raise ApprovalError(_("this call is no longer awaiting approval"))
    return call


def toolcall_decide(
    *,
    user: Any,
    call_id: int,
    approve: bool,
    arguments: dict[str, Any] | None = None,
    conversation_id: int | None = None,
    note: str = "",
) -> ToolCall:
    """Entry point for every path (websockets, pages): check who decides, then approve or
    deny."""
    call = toolcall_for_decision(user=user, call_id=call_id)
    if conversation_id is not None and call.conversation_id != conversation_id:
        raise ApprovalError(_("no such tool call"))
    if approve:
        return toolcall_approve(call=call, user=user, arguments=arguments, note=note)
    return toolcall_deny(call=call, user=user, note=note)


def is_approver(user: Any, group_ids: set[int] | None = None) -> bool:
    """Whether one of this person's groups approves some function's calls. ``group_ids``:
    ``decider_group_ids(user)``, when the caller has it."""
    if group_ids is None:
        group_ids = decider_group_ids(user)
    return not approver_group_ids().isdisjoint(group_ids)


def approver_group_ids() -> frozenset[int]:
    """The groups that approve some function's calls. Configuration (its writes move the
    token on): read once per configuration where the caller pins it (the chat page's badge),
    not on every page."""

    def build() -> frozenset[int]:
        through = ToolFunctionConfig.approver_groups.through
        return frozenset(through.objects.values_list("group_id", flat=True).distinct())

    return selectors.config_memo(("approver groups",), build)


# Every page runs it (compiled once per process: infra.prepared).
_WAITING = Prepared(
    lambda user_id: (
        ToolCall.objects.filter(
            status=ToolCall.Status.AWAITING_APPROVAL,
            approval_mode=ToolFunctionConfig.ApprovalMode.APPROVER,
        )
        .exclude(user_id=user_id)
        .select_related("user", "conversation")
        .order_by("created_at", "pk")
    ),
    user_id=int,
)


def approvals_for(user: Any, group_ids: set[int] | None = None) -> list[ToolCall]:
    """The calls waiting for an approver that this person may decide, oldest first.
    ``group_ids``: ``decider_group_ids(user)``, when the caller has it."""
    if not getattr(user, "is_authenticated", False):
        return []
    # Every page asks (the top bar's badge), and usually nothing waits: one plain read then,
    # and this person's own approvals only when there are calls to sift.
    waiting = _WAITING.rows(user_id=user.pk)
    if not waiting:
        return []
    approved = set(  # approved already: it waits for someone else
        ToolCallApproval.objects.filter(
            user_id=user.pk, call_id__in=[call.pk for call in waiting]
        ).values_list("call_id", flat=True)
    )
    mine = decider_group_ids(user) if group_ids is None else group_ids
    return [
        call
        for call in waiting
        if call.pk not in approved
        and approval_refusal(user=user, call=call, group_ids=mine) is None
    ]


def approval_deadline(call: ToolCall) -> Any:
    return call.created_at + timedelta(minutes=settings.APPROVAL_TIMEOUT_MINUTES)


def approvals_expire() -> int:
    """Deny every call that waited for approval longer than APPROVAL_TIMEOUT_MINUTES (a
    maintenance step: safe in several processes at once, each call is denied once). The
    waiting turn, schedule or MCP client goes on with the denial."""
    cutoff = timezone.now() - timedelta(minutes=settings.APPROVAL_TIMEOUT_MINUTES)
    expired = 0
    for call in ToolCall.objects.filter(
        status=ToolCall.Status.AWAITING_APPROVAL, created_at__lt=cutoff
    ).order_by("created_at"):
        error = approval_expired_reason()
        try:
            _deny(call, user=None, error=error, note="", decision="expired", reason=error)
        except ApprovalError:
            continue  # decided meanwhile
        expired += 1
    return expired
