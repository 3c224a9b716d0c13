"""The platform's pages: the Tokens page (personal API tokens — create, shown once; scopes,
rate limit and trace edited; revoke — and the calls of MCP and API clients waiting for this
user's approval), and the chat page's schedules and reports (the page includes them; see
``chat_page_panels``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.models import Agent, Conversation
from chat_app.services import privacy
from chat_app.services.agents import agent_granted, agents_for
from infra import access
from infra.safe_json import json_loads_safe
from platform_app import preapprovals, reports, self_service
from platform_app.api_tokens import (
    DEFAULT_SCOPES,
    SCOPES,
    TokenError,
    api_token_create,
    api_token_revoke,
    api_token_update,
    scopes_for,
)
from platform_app.models import Schedule
from platform_app.schedules import cron_explain, schedules_for, schedules_listed
from tools_app.models import ApiToken, ToolCall
from tools_app.services.approval import ApprovalError, toolcall_decide


def _rate_limit(request: HttpRequest) -> int | None:
    raw = request.POST.get("rate_limit", "").strip()
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > 9:
        raise TokenError(_("the rate limit must be a whole number of requests a minute"))
    return int(raw)


def _tokens_context(request: HttpRequest, created: str | None) -> dict[str, Any]:
    user_id = _me(request)
    held = scopes_for(request.user)
    return {
        "tokens": ApiToken.objects.filter(user_id=user_id).select_related("agent"),
        "agents": agents_for(request.user),
        "created": created,
        "scopes": [(name, SCOPES[name]) for name in held],
        "default_scopes": DEFAULT_SCOPES,
        "default_rate_limit": settings.API_RATE_LIMIT_PER_MINUTE,
        "mcp_url": request.build_absolute_uri("/mcp/"),
        "v1_url": request.build_absolute_uri("/v1"),
        "api_docs_url": request.build_absolute_uri("/api/docs"),
        "waiting": ToolCall.objects.filter(
            user_id=user_id,
            source__in=(ToolCall.Source.MCP, ToolCall.Source.API),
            status=ToolCall.Status.AWAITING_APPROVAL,
        ).order_by("created_at"),
    }


@access.signed_in
@require_http_methods(["GET", "POST"])
def tokens(request: HttpRequest) -> HttpResponse:
    created = None
    status = 200
    if request.method == "POST":
        agent_id = request.POST.get("agent", "")
        agent = Agent.objects.filter(pk=int(agent_id)).first() if agent_id.isdigit() else None
        try:
            if agent_id and agent is None:
                # Deleted since the page was shown: not silently the default agent's tools.
                raise TokenError(_("that agent profile no longer exists"))
            if agent is not None and not agent_granted(request.user, agent):
                raise TokenError(_("that agent profile is not granted to you — ask an admin"))
            # A form without scope boxes (an older page, a script): every scope held.
            posted = request.POST.getlist("scopes") if "scopes_shown" in request.POST else None
            token, created = api_token_create(
                user=request.user,
                name=request.POST.get("name", ""),
                agent=agent,
                scopes=posted,
                rate_limit_per_minute=_rate_limit(request),
                trace="trace" in request.POST or "scopes_shown" not in request.POST,
            )
        except TokenError as exc:
            messages.error(request, str(exc))
            status = 400
        else:
            messages.success(
                request,
                _("Token “%(name)s” created. Copy it now: it is not shown again.")
                % {"name": token.name},
            )
    response = render(
        request, "platform/tokens.html", _tokens_context(request, created), status=status
    )
    if created:
        response["Cache-Control"] = "no-store"
    return response


@access.signed_in
@require_POST
def token_edit(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_update(
            token_id=token_id,
            user=request.user,
            scopes=request.POST.getlist("scopes"),
            rate_limit_per_minute=_rate_limit(request),
            trace="trace" in request.POST,
        )
    except TokenError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("Token “%(name)s” saved.") % {"name": token.name})
    return redirect("platform:tokens")


@access.signed_in
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_revoke(token_id=token_id, user=request.user)
    except TokenError:
        messages.error(request, _("No such token."))
    else:
        messages.success(request, _("Token “%(name)s” revoked.") % {"name": token.name})
    return redirect("platform:tokens")


@access.signed_in
@require_POST
def token_decide(request: HttpRequest, call_id: int) -> HttpResponse:
    approve = request.POST.get("decision") == "approve"
    try:
        toolcall_decide(user=request.user, call_id=call_id, approve=approve)
    except ApprovalError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            _("Call #%(call_id)s %(value)s.")
            % {"call_id": call_id, "value": "approved" if approve else "denied"},
        )
    return redirect("platform:tokens")


# --- the chat page's schedules and reports ---------------------------------------------------


def chat_page_panels(request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
    """What the chat page shows of the platform (registered with ``chat_app.pages``)."""
    return {
        "schedules": schedules_listed(_me(request)),
        "reports": reports.conversation_reports(conversation),
    }


@access.signed_in
def schedule_list(request: HttpRequest) -> HttpResponse:
    """The sidebar's schedules (the page refreshes them after a schedule_* call); opened
    directly, the My schedules page."""
    if not getattr(request, "htmx", False):
        return my_schedules(request)
    schedules = schedules_listed(_me(request))
    return render(request, "chat/page.html#schedule-list", {"schedules": schedules})


@access.signed_in
@require_POST
def schedule_delete(request: HttpRequest, schedule_id: int) -> HttpResponse:
    deleted, _count = Schedule.objects.filter(pk=schedule_id, user_id=_me(request)).delete()
    if not deleted:  # someone else's, or gone: the same answer
        raise Http404("schedule not found")
    if request.POST.get("from") == "page":
        messages.success(request, _("Schedule deleted."))
        return redirect("platform:schedules")
    if getattr(request, "htmx", False):
        return schedule_list(request)
    return redirect("chat:index")


# --- the self-service pages: My memory, My schedules, My reports -------------------------


def _me(request: HttpRequest) -> int:
    return int(request.user.pk or 0)  # login_required: always a real user here


@access.signed_in
def my_memory(request: HttpRequest) -> HttpResponse:
    query = request.GET.get("q", "")[:200]
    context = {
        "query": query,
        "chunks": self_service.my_memory(user_id=_me(request), query=query),
        "core": self_service.my_core_memory(user_id=_me(request)),
    }
    return render(request, "platform/my_memory.html", context)


@access.signed_in
def my_memory_chunk(request: HttpRequest, chunk_id: int) -> HttpResponse:
    chunk = self_service.my_memory_chunk(user_id=_me(request), chunk_id=chunk_id)
    if chunk is None:
        raise Http404("memory entry not found")
    return render(request, "platform/my_memory_entry.html", {"chunk": chunk})


@access.signed_in
@require_POST
def my_memory_delete(request: HttpRequest, chunk_id: int) -> HttpResponse:
    if not self_service.my_memory_delete(user_id=_me(request), chunk_id=chunk_id):
        raise Http404("memory entry not found")
    messages.success(request, _("Memory entry deleted."))
    return redirect("platform:memory")


@access.signed_in
@require_POST
def my_core_delete(request: HttpRequest, entry_id: int) -> HttpResponse:
    if not self_service.my_core_delete(user_id=_me(request), entry_id=entry_id):
        raise Http404("core memory entry not found")
    messages.success(request, _("Core memory entry deleted."))
    return redirect("platform:memory")


def _schedule_rows(user_id: int) -> list[dict[str, Any]]:
    rows = []
    for schedule in schedules_for(user_id):
        rows.append({"schedule": schedule, "explained": cron_explain(schedule.cron)})
    return rows


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_schedules(request: HttpRequest) -> HttpResponse:
    zone = self_service.default_zone()
    form = self_service.ScheduleForm(name="", cron="0 9 * * 1-5", message="", timezone=zone)
    error = ""
    if request.method == "POST":
        form = self_service.ScheduleForm.of(request.POST, default_zone=zone)
        try:
            schedule = self_service.my_schedule_create(user_id=_me(request), form=form)
        except self_service.ScheduleInvalid as exc:
            error = str(exc)
        else:
            messages.success(request, _("Schedule “%(name)s” created.") % {"name": schedule.name})
            return redirect("platform:schedules")
    context = {
        "rows": _schedule_rows(_me(request)),
        "form": form,
        "error": error,
        "preview": _preview(form.cron, form.timezone),
    }
    return render(request, "platform/my_schedules.html", context, status=400 if error else 200)


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_schedule_edit(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = self_service.my_schedule(user_id=_me(request), schedule_id=schedule_id)
    if schedule is None:
        raise Http404("schedule not found")
    form = self_service.ScheduleForm(
        name=schedule.name,
        cron=schedule.cron,
        message=schedule.message,
        timezone=schedule.timezone,
        enabled=schedule.enabled,
    )
    error = ""
    if request.method == "POST":
        form = self_service.ScheduleForm.of(request.POST, default_zone=schedule.timezone)
        form.enabled = "enabled" in request.POST
        try:
            self_service.my_schedule_update(schedule=schedule, form=form)
        except self_service.ScheduleInvalid as exc:
            error = str(exc)
        else:
            messages.success(request, _("Schedule “%(name)s” saved.") % {"name": schedule.name})
            return redirect("platform:schedules")
    context = {
        "schedule": schedule,
        "form": form,
        "error": error,
        "preview": _preview(form.cron, form.timezone),
        "preapprovals": preapprovals.schedule_preapprovals_shown(schedule),
    }
    return render(request, "platform/my_schedule_edit.html", context, status=400 if error else 200)


@access.signed_in
@require_POST
def schedule_preapprove(request: HttpRequest, schedule_id: int) -> HttpResponse:
    """Pre-approve one function for a schedule's runs (its owner, for calls they decide
    themselves; an approver, for another person's): the form's function, arguments (JSON)
    and per-argument match (JSON)."""
    schedule = preapprovals.schedule_for_approver(user=request.user, schedule_id=schedule_id)
    if schedule is None:
        raise Http404("schedule not found")
    try:
        item = {
            "tool": request.POST.get("tool", "").strip(),
            "arguments": json_loads_safe(request.POST.get("arguments") or "{}"),
            "match": json_loads_safe(request.POST.get("match") or "{}"),
            "until": request.POST.get("until") or None,
        }
    except ValueError:
        messages.error(request, _("Arguments and match must be JSON objects."))
    else:
        try:
            grants = preapprovals.schedule_preapprove_for(
                schedule=schedule, approver=request.user, data=[item]
            )
        except ApprovalError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request,
                _("Pre-approved %(tool)s for schedule “%(name)s” (standing approval #%(id)s).")
                % {"tool": grants[0].tool, "name": schedule.name, "id": grants[0].pk},
            )
    if schedule.user_id == request.user.pk:
        return redirect("platform:schedule-edit", schedule_id=schedule.pk)
    return redirect(reverse("platform:approvals-schedules") + f"#schedule-{schedule.pk}")


@access.signed_in
@require_POST
def my_schedule_pause(request: HttpRequest, schedule_id: int) -> HttpResponse:
    schedule = self_service.my_schedule(user_id=_me(request), schedule_id=schedule_id)
    if schedule is None:
        raise Http404("schedule not found")
    paused = request.POST.get("paused") == "1"
    self_service.my_schedule_pause(schedule=schedule, paused=paused)
    messages.success(
        request,
        _("Schedule “%(name)s” %(value)s.")
        % {"name": schedule.name, "value": "paused" if paused else "resumed"},
    )
    return redirect("platform:schedules")


def _preview(cron: str, tz: str) -> dict[str, Any]:
    try:
        times = self_service.cron_preview(cron, tz=tz)
    except self_service.ScheduleInvalid as exc:
        return {"error": str(exc), "times": [], "explained": ""}
    return {"error": "", "times": times, "explained": cron_explain(cron), "zone": tz}


@access.signed_in
def my_cron_preview(request: HttpRequest) -> HttpResponse:
    """The next five firing times of the expression being typed (the form asks as it
    changes)."""
    cron = request.GET.get("cron", "")[:120]
    tz = request.GET.get("timezone", "")[:64] or self_service.default_zone()
    return render(request, "platform/_cron_preview.html", {"preview": _preview(cron, tz)})


@access.signed_in
def my_reports(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "platform/my_reports.html",
        {"reports": self_service.my_reports(user_id=_me(request))},
    )


def _viewed(request: HttpRequest, conversation_id: int, *, via: str) -> Conversation:
    """The owner's conversation, or anyone's for an auditor (the read is audited)."""
    conversation = privacy.conversation_read(
        user=request.user, conversation_id=conversation_id, via=via
    )
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


@access.signed_in
def reports_list(request: HttpRequest, conversation_id: int) -> HttpResponse:
    """The conversation's reports (create_report), newest first: the sidebar's list."""
    conversation = _viewed(request, conversation_id, via="reports")
    return render(
        request,
        "chat/page.html#reports-list",
        {"conversation": conversation, "reports": reports.conversation_reports(conversation)},
    )


@access.signed_in
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
