"""The Approvals page: the calls waiting for an approver that the viewer may decide."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from tools_app.models import ToolCall
from tools_app.services.approval import (
    ApprovalError,
    approval_deadline,
    approvals_for,
    toolcall_decide,
)


def _page(
    request: HttpRequest,
    *,
    errors: dict[int, str] | None = None,
    posted: dict[int, dict[str, str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    rows = [
        {
            "call": call,
            "deadline": approval_deadline(call),
            "error": (errors or {}).get(call.pk, ""),
            "posted": (posted or {}).get(call.pk),
        }
        for call in approvals_for(request.user)
    ]
    context = {"rows": rows, "approval_timeout": settings.APPROVAL_TIMEOUT_MINUTES}
    if request.headers.get("HX-Request") and request.method == "GET":
        return render(request, "platform/approvals.html#approvals-list", context)
    if errors and not any(row["error"] for row in rows):
        for message in errors.values():  # the call left the list (decided, refused)
            messages.error(request, message)
    return render(request, "platform/approvals.html", context, status=status)


@login_required
@require_GET
def approvals_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _edited_arguments(call: ToolCall | None, text: str) -> dict[str, Any] | None:
    """The arguments to approve with: None when the text is the call's own (unchanged)."""
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApprovalError(
            _("the arguments are not valid JSON (%(msg)s, line %(lineno)s)")
            % {"msg": exc.msg, "lineno": exc.lineno}
        ) from None
    if not isinstance(value, dict):
        raise ApprovalError(_("the arguments must be a JSON object"))
    if call is not None and value == call.arguments:
        return None
    return value


@login_required
@require_POST
def approval_decide(request: HttpRequest, call_id: int) -> HttpResponse:
    decision = request.POST.get("decision")
    note = request.POST.get("note", "")
    text = request.POST.get("arguments", "")
    try:
        if decision not in ("approve", "deny"):
            raise ApprovalError(_("choose Approve or Deny"))
        arguments = None
        if decision == "approve":
            current = ToolCall.objects.filter(pk=call_id).only("arguments").first()
            arguments = _edited_arguments(current, text)
        toolcall_decide(
            user=request.user,
            call_id=call_id,
            approve=decision == "approve",
            arguments=arguments,
            note=note,
        )
    except ApprovalError as exc:
        # The page again, with what was typed kept and the reason next to the call.
        return _page(
            request,
            errors={call_id: exc.message},
            posted={call_id: {"arguments": text, "note": note}},
            status=400,
        )
    word = "approved" if decision == "approve" else "denied"
    messages.success(request, _("Call #%(call_id)s %(word)s.") % {"call_id": call_id, "word": word})
    return redirect("platform:approvals")
