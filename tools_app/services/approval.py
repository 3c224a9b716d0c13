"""Approval of calls to functions an admin marked "requires approval"."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import F
from pydantic import ValidationError

from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolError
from tools_app.events import toolcall_publish
from tools_app.models import ToolCall
from tools_app.runtime import BindContext
from tools_app.services.audit import audit_approval, audit_call
from tools_app.services.binding import format_validation_error, toolcall_dispatch
from tools_app.services.execution import toolcall_finish

logger = logging.getLogger(__name__)


class ApprovalError(ToolError):
    """The decision cannot be applied (clear words for the person deciding)."""


def _revalidate(call: ToolCall, arguments: dict[str, Any]) -> dict[str, Any]:
    tool = selectors.tool_named(call.tool)
    if tool is None:
        raise ApprovalError(f"tool {call.tool!r} no longer exists")
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
        raise ApprovalError(f"policy: {exc.reason}") from None
    return validated.model_dump(mode="json", exclude_unset=True, by_alias=True)


def toolcall_approve(
    *, call: ToolCall, user: Any, arguments: dict[str, Any] | None = None
) -> ToolCall:
    """Approve a waiting call, optionally with edited arguments (validated and checked again)."""
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        raise ApprovalError("this call is no longer awaiting approval")
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
            raw_arguments=json.dumps(new_arguments),
            version=F("version") + 1,
        )
        if not moved:
            raise ApprovalError("this call was decided or cancelled meanwhile")
        call.refresh_from_db()
        held = _held(call)
        decision = "approved" if new_arguments == before else "approved with edited arguments"
        audit_approval(call=call, user=user, decision=decision, before=before, after=new_arguments)
        audit_call(call)
    toolcall_publish(call)
    if not held:
        toolcall_dispatch(call)
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


def toolcall_deny(*, call: ToolCall, user: Any) -> ToolCall:
    who = getattr(user, "username", "") or "a reviewer"
    error = f"denied by {who} (approval required)"
    if not toolcall_finish(
        call,
        status=ToolCall.Status.DENIED,
        result={"success": False, "error": error},
        error=error,
        duration_ms=0,
        only_if=ToolCall.Status.AWAITING_APPROVAL,
    ):
        raise ApprovalError("this call is no longer awaiting approval")
    ToolCall.objects.filter(pk=call.pk).update(policy_verdict="denied", policy_reason=error)
    audit_approval(call=call, user=user, decision="denied")
    return call


def toolcall_for_decision(*, user: Any, call_id: int) -> ToolCall:
    """The call, if this person may decide it: the conversation's owner, or staff."""
    call = ToolCall.objects.select_related("conversation").filter(pk=call_id).first()
    if call is None:
        raise ApprovalError("no such tool call")
    owner_id = call.conversation.owner_id if call.conversation else call.user_id
    if not (getattr(user, "is_staff", False) or owner_id == getattr(user, "pk", None)):
        raise ApprovalError("no such tool call")
    return call


def toolcall_decide(
    *,
    user: Any,
    call_id: int,
    approve: bool,
    arguments: dict[str, Any] | None = None,
    conversation_id: int | None = None,
) -> ToolCall:
    """Entry point for consumers: check who decides, then approve or deny."""
    call = toolcall_for_decision(user=user, call_id=call_id)
    if conversation_id is not None and call.conversation_id != conversation_id:
        raise ApprovalError("no such tool call")
    if approve:
        return toolcall_approve(call=call, user=user, arguments=arguments)
    return toolcall_deny(call=call, user=user)
