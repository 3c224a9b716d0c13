"""The Approvals page: the calls waiting for an approver that the viewer may decide."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from infra import access
from platform_app import preapprovals
from tools_app.models import ToolCall
from tools_app.services.approval import (
    ApprovalError,
    approval_deadline,
    approvals_for,
    approvals_summary,
    toolcall_for_preview,
)
from tools_app.services.preview import toolcall_preview
from tools_app.services.standing import (
    standing_revoke,
    standing_visible_to,
    toolcall_decide_widened,
)


def _page(
    request: HttpRequest,
    *,
    errors: dict[int, str] | None = None,
    posted: dict[int, dict[str, str]] | None = None,
    status: int = 200,
) -> HttpResponse:
    rows = []
    for call in approvals_for(request.user):
        typed = (posted or {}).get(call.pk)
        rows.append(
            {
                "call": call,
                "deadline": approval_deadline(call),
                "error": (errors or {}).get(call.pk, ""),
                "posted": typed,
                "preview": _preview_of(call, typed["arguments"] if typed else "", request.user),
                "approvals": approvals_summary(call) if call.approvals_needed > 1 else None,
            }
        )
    context = {"rows": rows, "approval_timeout": settings.APPROVAL_TIMEOUT_MINUTES}
    if request.headers.get("HX-Request") and request.method == "GET":
        return render(request, "platform/approvals.html#approvals-list", context)
    if errors and not any(row["error"] for row in rows):
        for message in errors.values():  # the call left the list (decided, refused)
            messages.error(request, message)
    return render(request, "platform/approvals.html", context, status=status)


def _preview_of(call: ToolCall, text: str, viewer: Any) -> Any:
    """The call's preview for ``text`` (edited arguments; blank: its own), or for its own
    arguments with why the text cannot be read; ``viewer``: who looks."""
    try:
        edited = _edited_arguments(call, text)
    except ApprovalError as exc:
        made = toolcall_preview(call=call)
        if made is not None:
            made.note = _("showing the call's own arguments: %(error)s") % {"error": exc.message}
        return made
    return toolcall_preview(call=call, arguments=edited, viewer_id=viewer.pk)


@access.signed_in
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


@access.signed_in
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
        toolcall_decide_widened(
            user=request.user,
            call_id=call_id,
            approve=decision == "approve",
            widening=_widening_posted(request, call_id),
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


@access.signed_in
@require_http_methods(["GET", "POST"])
def approval_preview(request: HttpRequest, call_id: int) -> HttpResponse:
    """The preview of a call waiting for a decision (htmx: the card and the Approvals page
    ask for it, and again with the arguments as edited). Only someone who may decide the
    call sees it: 404 for a call they may not know of, 403 for one they may not decide."""
    try:
        call = toolcall_for_preview(user=request.user, call_id=call_id)
    except ApprovalError as exc:
        if exc.message in (_("no such tool call"), _("this call is no longer awaiting approval")):
            raise Http404(exc.message) from None
        return access.forbidden(request, exc.message)
    made = _preview_of(call, request.POST.get("arguments", ""), request.user)
    return render(request, "tools/_approval_preview.html", {"call": call, "preview": made})


def _widening_posted(request: HttpRequest, call_id: int) -> dict[str, Any] | None:
    """The widening chosen on the page's form (``_approval_widen.html``)."""
    scope = request.POST.get(f"widen-{call_id}", "call")
    if scope == "call":
        return None
    prefix = f"match-{call_id}-"
    match: dict[str, Any] = {
        k[len(prefix) :]: v for k, v in request.POST.items() if k.startswith(prefix)
    }
    for name, kind in match.items():
        if kind == "prefix":
            match[name] = {"kind": kind, "value": request.POST.get(f"prefix-{call_id}-{name}", "")}
    return {"scope": scope, "match": match, "until": request.POST.get(f"until-{call_id}") or None}


@access.signed_in
@require_GET
def standing_page(request: HttpRequest) -> HttpResponse:
    """Approvals → Standing: the standing approvals this person made or that are for them
    (an admin: all), with Revoke where they may."""
    grants = list(standing_visible_to(request.user)[:500])
    names = preapprovals.schedule_names([g.schedule_id for g in grants if g.schedule_id])
    for grant in grants:
        name = names.get(grant.schedule_id or 0, "")
        grant.schedule_name = name  # type: ignore[attr-defined]
    rows = [
        {"grant": grant, "revocable": access.standing_revocable(request.user, grant)}
        for grant in grants
    ]
    return render(request, "platform/approvals_standing.html", {"rows": rows})


@access.signed_in
@require_GET
def schedules_page(request: HttpRequest) -> HttpResponse:
    """Approvals → Schedules: other people's schedules an approver (or an admin) may
    pre-approve calls for, each with what is pre-approved and the form."""
    rows = [
        {
            "schedule": schedule,
            "preapprovals": preapprovals.schedule_preapprovals_shown(schedule),
            "suffix": f"-{schedule.pk}",
        }
        for schedule in preapprovals.schedules_for_approver(request.user)
    ]
    return render(request, "platform/approvals_schedules.html", {"rows": rows})


@access.signed_in
@require_POST
def standing_revoke_view(request: HttpRequest, grant_id: int) -> HttpResponse:
    try:
        standing_revoke(grant_id=grant_id, user=request.user)
    except ApprovalError as exc:
        return access.forbidden(request, exc.message)
    messages.success(request, _("Standing approval #%(id)s revoked.") % {"id": grant_id})
    return redirect("platform:approvals-standing")
