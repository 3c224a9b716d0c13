"""Approval of calls to functions an admin set to an approval mode.

Who decides (``approval_refusal``, the one rule every path uses — the chat's and the Tools
Manager's websockets, the tokens page, the Approvals page):

- requester mode: the person who asked (a confirm step);
- approver mode: a member of one of the function's approver groups (the implicit "Everyone"
  group counts for every user), or, when the function names no group, an admin — and never
  the person who asked, whatever else they are.

A refused decision is recorded in the audit log with its reason and changes nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext as _
from pydantic import ValidationError

from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolError
from tools_app.events import toolcall_publish
from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.runtime import BindContext
from tools_app.services.approval_notify import EVERYONE
from tools_app.services.audit import audit_approval, audit_call
from tools_app.services.binding import format_validation_error, toolcall_dispatch
from tools_app.services.execution import toolcall_finish
from tools_app.signals import approval_decided, notify

logger = logging.getLogger(__name__)


class ApprovalError(ToolError):
    """The decision cannot be applied (clear words for the person deciding)."""


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
    try:
        validated.check_policy(selectors.group_settings(call.group), ctx)
    except PolicyDenied as exc:
        raise ApprovalError(_("policy: %(reason)s") % {"reason": exc.reason}) from None
    return validated.model_dump(mode="json", exclude_unset=True, by_alias=True)


def toolcall_approve(
    *, call: ToolCall, user: Any, arguments: dict[str, Any] | None = None, note: str = ""
) -> ToolCall:
    """Approve a waiting call, optionally with edited arguments (validated and checked again)."""
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        raise ApprovalError(_("this call is no longer awaiting approval"))
    before = call.arguments
    new_arguments = before if arguments is None else _revalidate(call, arguments)
    # One transaction: nobody sees the call queued before a receiver had its say (a worker
    # or the redelivery pass would run a clarification the chat is about to hold).
    with transaction.atomic():
        moved = ToolCall.objects.filter(
            pk=call.pk, status=ToolCall.Status.AWAITING_APPROVAL
        ).update(
            status=ToolCall.Status.QUEUED,
            arguments=new_arguments,
            raw_arguments=json.dumps(new_arguments, ensure_ascii=False),
            decided_by=user if getattr(user, "pk", None) else None,
            decision_note=note.strip()[:NOTE_MAX],
            version=F("version") + 1,
        )
        if not moved:
            raise ApprovalError(_("this call was decided or cancelled meanwhile"))
        call.refresh_from_db()
        held = _held(call)
        decision = "approved" if new_arguments == before else "approved with edited arguments"
        audit_approval(
            call=call,
            user=user,
            decision=decision,
            before=before,
            after=new_arguments,
            note=call.decision_note,
        )
        audit_call(call)
    toolcall_publish(call)
    if not held:
        toolcall_dispatch(call)
    notify(approval_decided, call=call, decision=decision)
    return call


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
    who = getattr(user, "username", "") or "a reviewer"
    note = note.strip()[:NOTE_MAX]
    error = f"denied by {who} (approval required)" + (f": {note}" if note else "")
    return _deny(call, user=user, error=error, note=note, decision="denied")


def _deny(call: ToolCall, *, user: Any, error: str, note: str, decision: str) -> ToolCall:
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
        raise ApprovalError(_("this call is no longer awaiting approval"))
    ToolCall.objects.filter(pk=call.pk).update(policy_verdict="denied", policy_reason=error)
    audit_approval(call=call, user=user, decision=decision, note=note)
    notify(approval_decided, call=call, decision=decision)
    return call


NOTE_MAX = 2000


def decider_group_ids(user: Any) -> set[int]:
    """The ids of the groups whose approvals this person may decide: their own, Everyone's."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return set()
    return set(Group.objects.filter(Q(user=user) | Q(name=EVERYONE)).values_list("pk", flat=True))


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


def toolcall_for_decision(*, user: Any, call_id: int) -> ToolCall:
    """The call, if this person may decide it; otherwise ApprovalError, recorded in the audit
    log (a call that does not exist is not)."""
    call = ToolCall.objects.select_related("conversation").filter(pk=call_id).first()
    if call is None:
        raise ApprovalError(_("no such tool call"))
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


def is_approver(user: Any) -> bool:
    """Whether one of this person's groups approves some function's calls."""
    return ToolFunctionConfig.approver_groups.through.objects.filter(
        group_id__in=decider_group_ids(user)
    ).exists()


def approvals_for(user: Any) -> list[ToolCall]:
    """The calls waiting for an approver that this person may decide, oldest first."""
    if not getattr(user, "is_authenticated", False):
        return []
    waiting = (
        ToolCall.objects.filter(
            status=ToolCall.Status.AWAITING_APPROVAL,
            approval_mode=ToolFunctionConfig.ApprovalMode.APPROVER,
        )
        .exclude(user_id=user.pk)
        .select_related("user", "conversation")
        .order_by("created_at", "pk")
    )
    mine = decider_group_ids(user)
    return [
        call for call in waiting if approval_refusal(user=user, call=call, group_ids=mine) is None
    ]


def approval_deadline(call: ToolCall) -> Any:
    return call.created_at + timedelta(minutes=settings.APPROVAL_TIMEOUT_MINUTES)


def approvals_expire() -> int:
    """Deny every call that waited for approval longer than APPROVAL_TIMEOUT_MINUTES (a
    maintenance step: safe in several processes at once, each call is denied once). The
    waiting turn, schedule or MCP client goes on with the denial."""
    minutes = settings.APPROVAL_TIMEOUT_MINUTES
    cutoff = timezone.now() - timedelta(minutes=minutes)
    expired = 0
    for call in ToolCall.objects.filter(
        status=ToolCall.Status.AWAITING_APPROVAL, created_at__lt=cutoff
    ).order_by("created_at"):
        error = f"approval expired after {minutes} min"
        try:
            _deny(call, user=None, error=error, note="", decision="expired")
        except ApprovalError:
            continue  # decided meanwhile
        expired += 1
    return expired
