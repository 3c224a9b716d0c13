"""The Tokens page (any signed-in user): personal API tokens for MCP clients — create (shown
once), revoke — and the MCP calls waiting for this user's approval."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.models import Agent
from tools_app.models import ApiToken, ToolCall
from tools_app.services.api_tokens import TokenError, api_token_create, api_token_revoke


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
        "agents": Agent.objects.all(),
        "created": created,
        "mcp_url": request.build_absolute_uri("/mcp/"),
        "waiting": ToolCall.objects.filter(
            user_id=user_id,
            source=ToolCall.Source.MCP,
            status=ToolCall.Status.AWAITING_APPROVAL,
        ).order_by("created_at"),
    }
    response = render(request, "tools/tokens.html", context)
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
    return redirect("tokens")


@login_required
@require_POST
def token_decide(request: HttpRequest, call_id: int) -> HttpResponse:
    from tools_app.services.approval import ApprovalError, toolcall_decide

    approve = request.POST.get("decision") == "approve"
    try:
        toolcall_decide(user=request.user, call_id=call_id, approve=approve)
    except ApprovalError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Call #{call_id} {'approved' if approve else 'denied'}.")
    return redirect("tokens")
