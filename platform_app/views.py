"""The platform's pages: the Tokens page (personal API tokens for MCP clients — create, shown
once; revoke — and the MCP calls waiting for this user's approval), and the chat page's
schedules and reports (the page includes them; see ``chat_page_panels``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.models import Agent, Conversation
from chat_app.services import privacy
from chat_app.services.agents import agent_granted, agents_for
from platform_app import reports
from platform_app.api_tokens import TokenError, api_token_create, api_token_revoke
from platform_app.models import Schedule
from platform_app.schedules import schedules_for
from tools_app.models import ApiToken, ToolCall
from tools_app.services.approval import ApprovalError, toolcall_decide


@login_required
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    created = None
    if request.method == "POST":
        agent_id = request.POST.get("agent", "")
        agent = Agent.objects.filter(pk=int(agent_id)).first() if agent_id.isdigit() else None
        try:
            if agent_id and agent is None:
                # Deleted since the page was shown: not silently the default agent's tools.
                raise TokenError("that agent profile no longer exists")
            if agent is not None and not agent_granted(request.user, agent):
                raise TokenError("that agent profile is not granted to you — ask an admin")
            token, created = api_token_create(
                user=request.user, name=request.POST.get("name", ""), agent=agent
            )
        except TokenError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, f"Token “{token.name}” created. Copy it now: it is not shown again."
            )
    user_id = int(request.user.pk or 0)  # login_required: always a real user here
    context = {
        "tokens": ApiToken.objects.filter(user_id=user_id).select_related("agent"),
        "agents": agents_for(request.user),
        "created": created,
        "mcp_url": request.build_absolute_uri("/mcp/"),
        "waiting": ToolCall.objects.filter(
            user_id=user_id,
            source=ToolCall.Source.MCP,
            status=ToolCall.Status.AWAITING_APPROVAL,
        ).order_by("created_at"),
    }
    response = render(request, "platform/tokens.html", context)
    if created:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_revoke(token_id=token_id, user=request.user)
    except TokenError:
        messages.error(request, "No such token.")
    else:
        messages.success(request, f"Token “{token.name}” revoked.")
    return redirect("platform:tokens")


@login_required
@require_POST
def token_decide(request: HttpRequest, call_id: int) -> HttpResponse:
    approve = request.POST.get("decision") == "approve"
    try:
        toolcall_decide(user=request.user, call_id=call_id, approve=approve)
    except ApprovalError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Call #{call_id} {'approved' if approve else 'denied'}.")
    return redirect("platform:tokens")


# --- the chat page's schedules and reports ---------------------------------------------------


def chat_page_panels(request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
    """What the chat page shows of the platform (registered with ``chat_app.pages``)."""
    return {
        "schedules": list(schedules_for(int(request.user.pk or 0))),
        "reports": reports.conversation_reports(conversation),
    }


@login_required
def schedule_list(request: HttpRequest) -> HttpResponse:
    """The sidebar's schedules (the page refreshes them after a schedule_* call)."""
    schedules = list(schedules_for(int(request.user.pk or 0)))
    return render(request, "chat/page.html#schedule-list", {"schedules": schedules})


@login_required
@require_POST
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    deleted, _ = Schedule.objects.filter(pk=schedule_id, user_id=int(request.user.pk or 0)).delete()
    if not deleted:  # someone else's, or gone: the same answer
        raise Http404("schedule not found")
    if getattr(request, "htmx", False):
        return schedule_list(request)
    return redirect("chat:index")


def _viewed(request: HttpRequest, conversation_id: int, *, via: str) -> Conversation:
    """The owner's conversation, or anyone's for an auditor (the read is audited)."""
    conversation = privacy.conversation_read(
        user=request.user, conversation_id=conversation_id, via=via
    )
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


@login_required
def reports_list(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The conversation's reports (create_report), newest first: the sidebar's list."""
    conversation = _viewed(request, conversation_id, via="reports")
    return render(
        request,
        "chat/page.html#reports-list",
        {"conversation": conversation, "reports": reports.conversation_reports(conversation)},
    )


@login_required
def report_download(request: HttpRequest, conversation_id: int, name: str) -> HttpResponse:
    data = reports.conversation_report(
        _viewed(request, conversation_id, via=f"report {name}"), name
    )
    if data is None:
        raise Http404("report not found")
    response = HttpResponse(data, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
