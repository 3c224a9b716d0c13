"""Tool calls: yours (list, read), and deciding the ones that wait for you (approve, deny).

Decisions go through ``tools_app.services.approval`` like every other path: the same rule
says who may decide (``approval_refusal``: in approver mode an approver group's member, and
never the person who asked — a token is its owner, so a requester's token cannot approve its
own call), a refusal is written to the audit log, and edited arguments are validated and
checked against policy again.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router

from chat_app.services import privacy
from platform_app.api.errors import ApiError
from platform_app.api.rest.base import BY_ID_DESC, errors, etag_of, not_modified, scope, user_of
from platform_app.api.rest.schemas import ApproveIn, DenyIn, ToolCallOut, ToolCallPage
from tools_app.models import ToolCall
from tools_app.services.approval import (
    AlreadyApproved,
    ApprovalError,
    approval_refusal,
    approvals_for,
    no_longer_waiting,
    toolcall_for_decision,
)
from tools_app.services.standing import WideningError, toolcall_decide_on

router = Router(tags=["tool calls"])
NOT_FOUND = "no such tool call"


def _mine(user: Any) -> Q:
    return Q(user=user) | Q(conversation__owner=user)


@router.get("/tool-calls", response={200: ToolCallPage, **errors(400)}, auth=scope("read"))
def toolcall_list(
    request: HttpRequest,
    conversation_id: int | None = None,
    status: str | None = Query(None, max_length=20),
    cursor: str | None = None,
    limit: int = Query(50, ge=1, le=200),
) -> Any:
    """Your tool calls (those you asked for, and those of your conversations), newest first."""
    calls = ToolCall.objects.filter(_mine(user_of(request))).select_related("decided_by")
    if conversation_id is not None:
        calls = calls.filter(conversation_id=conversation_id)
    if status:
        calls = calls.filter(status=status)
    rows, following = BY_ID_DESC.page(calls.distinct(), cursor=cursor, limit=limit)
    return {"items": [ToolCallOut.of(c) for c in rows], "next_cursor": following}


def _visible(request: HttpRequest, call_id: int) -> ToolCall:
    """The call if it is yours, waits for your decision, or is in a conversation you may
    read as an auditor (that read audited); else 404, with no hint which."""
    user = user_of(request)
    call = ToolCall.objects.select_related("conversation", "decided_by").filter(pk=call_id).first()
    if call is None:
        raise ApiError(404, NOT_FOUND, code="not_found")
    owner = call.conversation.owner_id if call.conversation else None
    if user.pk in (call.user_id, owner):
        return call
    if call.status == ToolCall.Status.AWAITING_APPROVAL and not approval_refusal(
        user=user, call=call
    ):
        return call
    if call.conversation_id is not None and privacy.conversation_read(
        user=user, conversation_id=call.conversation_id, via=f"api tool call {call.pk}"
    ):
        return call
    raise ApiError(404, NOT_FOUND, code="not_found")


@router.get(
    "/tool-calls/{call_id}",
    response={200: ToolCallOut, 304: None, **errors(404)},
    auth=scope("read"),
)
def toolcall_read(request: HttpRequest, response: HttpResponse, call_id: int) -> Any:
    """One call: arguments, status, result, who decided. Sends an ETag (its version)."""
    call = _visible(request, call_id)
    if not_modified(request, response, etag_of("call", call.pk, call.version, call.status)):
        return 304, None
    return ToolCallOut.of(call)


@router.get("/approvals", response={200: list[ToolCallOut], **errors()}, auth=scope("approve"))
def approval_list(request: HttpRequest) -> Any:
    """The calls waiting for your decision, oldest first: those an approver group of yours
    decides (never your own), and your own calls of functions you confirm yourself."""
    user = user_of(request)
    waiting = list(approvals_for(user))
    confirm = ToolCall.objects.filter(status=ToolCall.Status.AWAITING_APPROVAL, user=user).exclude(
        approval_mode="approver"
    )
    seen = {c.pk for c in waiting}
    waiting += [c for c in confirm.order_by("created_at", "pk") if c.pk not in seen]
    return [ToolCallOut.of(c) for c in waiting]


def _decided(request: HttpRequest, call_id: int, *, approve: bool, body: Any) -> ToolCall:
    user = user_of(request)
    try:
        call = toolcall_for_decision(user=user, call_id=call_id)  # a refusal is audited
    except ApprovalError as exc:
        if exc.message == NOT_FOUND:
            raise ApiError(404, NOT_FOUND, code="not_found") from None
        raise ApiError(403, exc.message, code="not_your_decision") from None
    if call.status != ToolCall.Status.AWAITING_APPROVAL:
        raise ApiError(409, no_longer_waiting(call).message, code="already_decided")
    try:
        toolcall_decide_on(
            call=call,
            user=user,
            approve=approve,
            widening=getattr(body, "widening", None),  # a denial's body has neither
            arguments=getattr(body, "arguments", None),
            note=body.note,
        )
    except AlreadyApproved as exc:
        raise ApiError(409, exc.message, code="already_approved") from None
    except WideningError as exc:
        raise ApiError(422, exc.message, code="invalid_widening", param="widening") from None
    except ApprovalError as exc:
        call.refresh_from_db()
        if call.status != ToolCall.Status.AWAITING_APPROVAL:
            raise ApiError(409, exc.message, code="already_decided") from None
        raise ApiError(422, exc.message, code="invalid_arguments", param="arguments") from None
    call.refresh_from_db()
    return call


@router.post(
    "/tool-calls/{call_id}/approve",
    response={200: ToolCallOut, **errors(404, 409)},
    auth=scope("approve"),
)
def toolcall_approve_view(request: HttpRequest, call_id: int, body: ApproveIn) -> Any:
    """Approve a call that waits for you, optionally with edited arguments (checked again).
    A call that needs several approvers keeps waiting until the last (``approvals_needed``,
    ``approved_by``). 403: it is not yours to decide (in approver mode, never your own);
    409: decided already, or you approved it already."""
    return ToolCallOut.of(_decided(request, call_id, approve=True, body=body))


@router.post(
    "/tool-calls/{call_id}/deny",
    response={200: ToolCallOut, **errors(404, 409)},
    auth=scope("approve"),
)
def toolcall_deny_view(request: HttpRequest, call_id: int, body: DenyIn) -> Any:
    """Deny a call that waits for you; the model (or client) reads why."""
    return ToolCallOut.of(_decided(request, call_id, approve=False, body=body))
