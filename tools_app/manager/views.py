"""Tools Manager and audit log pages (staff only) and the tool-schemas API (any signed-in user).

Views stay thin: forms parse, services write, selectors read. htmx requests get the named
partial of the same page template; plain requests get the page (everything works without JS).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from django.conf import settings as django_settings
from django.contrib import messages
from django.contrib.auth.models import Group
from django.core.paginator import Paginator
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import reswap, retarget
from django_htmx.middleware import HtmxDetails
from pydantic import ValidationError

from infra import access
from infra.markdown import markdown_html
from tools_app import selectors
from tools_app.manager import audit_selectors
from tools_app.manager import selectors as manager_selectors
from tools_app.manager.forms import SettingsForm, ToolTestForm
from tools_app.manager.review import record_diff
from tools_app.models import AuditRecord, ToolCall
from tools_app.runtime import BindContext
from tools_app.services import audit_chain
from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch
from tools_app.services.settings import (
    FUNCTION_SWITCHES,
    function_switch_set,
    group_enabled_set,
    group_settings_save,
)

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


class HtmxHttpRequest(HttpRequest):
    """What django-htmx's middleware adds, for the type checker."""

    htmx: HtmxDetails


def _posted_bool(request: HttpRequest, name: str) -> bool:
    # Switch forms post a hidden "0" before the checkbox's "1": the last value wins.
    values = request.POST.getlist(name)
    return bool(values) and values[-1] in ("1", "on", "true")


# --- Tools Manager -------------------------------------------------------------------------
@access.staff
@require_GET
def manager(request: HttpRequest) -> HttpResponse:
    context = {
        "rows": manager_selectors.group_rows(),
        "everyone": manager_selectors.everyone_grants_summary(),
    }
    return render(request, "tools/manager.html", context)


def _group_body(request: HtmxHttpRequest, group: str) -> HttpResponse:
    if request.htmx:
        row = manager_selectors.group_row(group)
        return render(request, "tools/manager.html#group-body", {"row": row})
    return redirect("tools:manager")


@access.staff
@require_POST
def group_toggle(request: HtmxHttpRequest, group: str) -> HttpResponse:
    if selectors.group_named(group) is None:
        raise Http404("unknown tool group")
    group_enabled_set(user=request.user, group=group, enabled=_posted_bool(request, "enabled"))
    return _group_body(request, group)


@access.staff
@require_POST
def function_toggle(request: HtmxHttpRequest, tool: str, switch: str) -> HttpResponse:
    found = selectors.tool_named(tool)
    if found is None or switch not in FUNCTION_SWITCHES:
        raise Http404("unknown tool or switch")
    function_switch_set(
        user=request.user, tool=tool, switch=switch, value=_posted_bool(request, switch)
    )
    return _group_body(request, found.tool_group)


@access.staff
@require_GET
def group_docs(request: HtmxHttpRequest, group: str) -> HttpResponse:
    """The group's page of docs/tools/, the one the model reads with docs_read."""
    if selectors.group_named(group) is None:
        raise Http404("unknown tool group")
    row = manager_selectors.group_row(group)
    if not row.docs_page:
        raise Http404("this tool group has no page in docs/tools/")
    text = (django_settings.PROJECT_DOCS_DIR / row.docs_page).read_text(encoding="utf-8")
    html = mark_safe(markdown_html(text, breaks=False))  # noqa: S308 - sanitised by nh3
    return render(request, "tools/group_docs.html", {"row": row, "html": html})


@access.staff
@require_http_methods(["GET", "POST"])
def group_edit(request: HtmxHttpRequest, group: str) -> HttpResponse:
    if selectors.group_named(group) is None:
        raise Http404("unknown tool group")
    row = manager_selectors.group_row(group)
    model = row.group.settings_model
    form = SettingsForm(request.POST or None, model=model, current=row.settings)
    changed: list[str] | None = None
    if request.method == "POST" and form.is_valid():
        try:
            settings, changed = group_settings_save(
                user=request.user,
                group=group,
                values=form.values,
                clear_secrets=form.clear_secrets,
            )
        except ValidationError as exc:  # the service is the last word; normally never here
            form.add_validation_error(exc)
        else:
            if not request.htmx:
                messages.success(request, _saved_message(row.group.label, changed))
                return redirect("tools:manager")
            form = SettingsForm(model=model, current=settings)
    context = {"row": row, "form": form, "changed": changed}
    if request.htmx:
        return render(request, "tools/group_edit.html#settings-form", context)
    return render(request, "tools/group_edit.html", context)


def _saved_message(label: str, changed: list[str]) -> str:
    if not changed:
        return f"{label}: nothing changed."
    return f"{label} settings saved ({', '.join(changed)})."


@access.staff
@require_http_methods(["GET", "POST"])
def function_test(request: HtmxHttpRequest, tool: str) -> HttpResponse:
    found = selectors.tool_named(tool)
    if found is None:
        raise Http404("unknown tool")
    schema = found.anthropic_schema()["input_schema"]
    form = ToolTestForm(request.POST or None, schema=schema, example=found.example())
    calls: list[ToolCall] = []
    if request.method == "POST":
        if form.is_valid():
            call = _run_test(request, tool, form.arguments())
            if request.htmx:
                return render(request, "tools/test.html#test-run", {"call": call})
            return redirect(f"{reverse('tools:function_test', args=[tool])}?call={call.pk}")
        if request.htmx:
            response = render(request, "tools/test.html#test-form", _test_context(found, form))
            return reswap(retarget(response, "#test-form"), "outerHTML")
    elif request.GET.get("call", "").isdigit():
        calls = list(ToolCall.objects.filter(pk=int(request.GET["call"]), tool=tool))
    return render(request, "tools/test.html", {**_test_context(found, form), "calls": calls})


def _test_context(tool: Any, form: ToolTestForm) -> dict[str, Any]:
    row = manager_selectors.group_row(tool.tool_group)
    function = next(f for f in row.functions if f.name == tool.tool_name)
    return {
        "row": row,
        "function": function,
        "form": form,
        "openai_schema": json.dumps(tool.openai_schema(), indent=2),
        "groups": Group.objects.order_by("name"),
    }


def _run_test(request: HtmxHttpRequest, tool: str, arguments: str | dict[str, Any]) -> ToolCall:
    """The real path: binding (schema, policy, limits, approval), then the tool's queue."""
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=request.user.pk, conversation_id=None, source="test"),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_dispatch(call)
    return call


# --- audit log -----------------------------------------------------------------------------
@access.staff
@require_GET
def audit(request: HttpRequest) -> HttpResponse:
    filters = audit_selectors.AuditFilters.from_query(request.GET)
    if filters.call is not None and filters.as_query() == {"call": str(filters.call)}:
        record = audit_selectors.audit_record_for_call(filters.call)
        if record is not None:  # the card's "audit" link lands on the call's own record
            return redirect("tools:audit", record_id=record.pk)
    qs = audit_selectors.audit_records(filters)
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    context = {
        "filters": filters,
        "query": filters.as_query(),
        "page": page,
        "choices": audit_selectors.audit_filter_choices(),
        "kinds": AuditRecord.Kind.choices,
        "chain": audit_chain.chain_state(),
    }
    return render(request, "tools/audit.html", context)


@access.staff
@require_GET
def audit_detail(request: HttpRequest, record_id: int) -> HttpResponse:
    record = AuditRecord.objects.select_related("tool_call").filter(pk=record_id).first()
    if record is None:
        raise Http404("no such audit record")
    access = audit_selectors.audit_record_conversation_access(record, viewer=request.user)
    related = (
        AuditRecord.objects.filter(tool_call_id=record.tool_call_id).exclude(pk=record.pk)
        if record.tool_call_id
        else AuditRecord.objects.none()
    )
    context = {
        "record": record,
        # Staff read the log, not the conversations: the link is for the owner and auditors.
        "conversation": access,
        "related": related,
        "changes": _settings_changes(record),
        "definition_diff": record_diff(record)
        if record.kind == AuditRecord.Kind.DEFINITION
        else None,
    }
    return render(request, "tools/audit_detail.html", context)


def _settings_changes(record: AuditRecord) -> list[tuple[str, Any, Any]]:
    if record.kind not in (AuditRecord.Kind.SETTINGS, AuditRecord.Kind.PEOPLE):
        return []
    before, after = record.detail.get("before") or {}, record.detail.get("after") or {}
    keys = record.detail.get("changed") or sorted(set(before) | set(after))
    return [(key, before.get(key), after.get(key)) for key in keys]


def _export(request: HttpRequest, extension: str) -> StreamingHttpResponse:
    """Stream the filtered log page by page: the server is ASGI, so the body is an async
    iterator that reads each page in a worker thread instead of loading the log in memory."""
    qs = audit_selectors.audit_records(audit_selectors.AuditFilters.from_query(request.GET))
    content_type = "text/csv" if extension == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(
        audit_selectors.audit_export_lines(qs, extension),
        content_type=f"{content_type}; charset=utf-8",
    )
    filename = f"audit-{timezone.now():%Y%m%d-%H%M%S}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@access.staff
@require_GET
def audit_export_csv(request: HttpRequest) -> StreamingHttpResponse:
    return _export(request, "csv")


@access.staff
@require_GET
def audit_export_jsonl(request: HttpRequest) -> StreamingHttpResponse:
    return _export(request, "jsonl")


@access.staff
@require_GET
def audit_chain_export(request: HttpRequest) -> HttpResponse | StreamingHttpResponse:
    """The whole chain (or from the signed checkpoint before ``?since=7d``) as JSONL that
    ``manage.py audit verify --file`` checks with only the public key."""
    since = request.GET.get("since", "").strip()
    start = None
    if since:
        days = since.removesuffix("d")
        if not days.isdigit():
            return HttpResponse("since: a number of days, like 7d", status=400)
        start = timezone.now() - timedelta(days=int(days))
    response = StreamingHttpResponse(
        (line + "\n" for line in audit_chain.export_lines(since=start)),
        content_type="application/x-ndjson; charset=utf-8",
    )
    filename = f"audit-chain-{timezone.now():%Y%m%d-%H%M%S}.jsonl"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@access.staff
@require_GET
def audit_public_key(request: HttpRequest) -> HttpResponse:
    """The audit signing key's public half: what verifies the chain's checkpoints."""
    response = HttpResponse(audit_chain.public_key_pem(), content_type="application/x-pem-file")
    response["Content-Disposition"] = 'attachment; filename="audit-signing-key.pub.pem"'
    return response


# --- API -----------------------------------------------------------------------------------
@access.public("answers 401 JSON itself to anyone not signed in (a script's call)")
@require_GET
def tool_schemas(request: HttpRequest) -> JsonResponse:
    """The enabled tools in OpenAI format. Any signed-in user: it is what their agent sees."""
    if not access.active(request.user):
        return JsonResponse({"error": "authentication required"}, status=401)
    strict = request.GET.get("strict", "1").lower() not in ("0", "false", "no")
    return JsonResponse(manager_selectors.enabled_tool_schemas(strict=strict))
