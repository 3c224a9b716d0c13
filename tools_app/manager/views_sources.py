"""Tools Manager pages for imported tool sources: register an MCP server, import an OpenAPI
document (preview, then choose), refresh, change the connection, remove; per-function limits.
Thin: forms parse, services (tools_app.services.sources, the executors' services) act."""

from __future__ import annotations

from django.contrib import messages
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from infra import access
from tools_app.executors.openapi.importer import openapi_document_preview, openapi_import
from tools_app.manager import selectors as manager_selectors
from tools_app.manager.source_env_forms import StdioEnvForm
from tools_app.manager.source_forms import (
    McpConnectionForm,
    McpServerForm,
    OpenApiForm,
    OpenApiImportForm,
)
from tools_app.manager.views import HtmxHttpRequest
from tools_app.models import ToolSource
from tools_app.services.sources import SourceError, source_delete


def _manager_at(source: ToolSource) -> str:
    return f"{reverse('tools:manager')}#group-{source.group_name}"


def _queue_refresh(source: ToolSource, user_id: int | None = None) -> None:
    from tools_app.services.sources import source_state_set
    from tools_app.tasks import refresh_tool_source

    source_state_set(source, ToolSource.State.REFRESHING)
    transaction.on_commit(
        lambda: refresh_tool_source.apply_async((source.pk, user_id), queue="tools")
    )


@access.staff
@require_http_methods(["GET", "POST"])
def schema_new(request: HttpRequest) -> HttpResponse:
    """Define tools from a JSON Schema (seed 001): the same service as ``tools define``."""
    from tools_app.executors.defined.services import DefinitionError, tools_define

    text = request.POST.get("definition", "") if request.method == "POST" else ""
    error = ""
    if request.method == "POST":
        if not text.strip():
            error = _("Paste a definition first.")
        else:
            try:
                source, created = tools_define(text, user=request.user)
            except DefinitionError as exc:
                error = str(exc)
            else:
                names = ", ".join(f["name"] for f in source.functions)
                messages.success(
                    request,
                    (_("Defined: %(names)s.") if created else _("Redefined: %(names)s."))
                    % {"names": names},
                )
                return redirect(_manager_at(source))
    return render(
        request,
        "tools/source_schema.html",
        {"definition": text, "error": error, "example": SCHEMA_EXAMPLE},
    )


SCHEMA_EXAMPLE = """{"name": "helpers", "tools": [
  {"name": "clock_in", "description": "The time in a city's timezone.",
   "input_schema": {"type": "object",
                    "properties": {"tz": {"type": "string", "description": "IANA timezone"}},
                    "required": ["tz"]},
   "bind": {"tool": "current_time", "arguments": {"timezone": "{tz}"}}}
]}"""


@access.staff
@require_http_methods(["GET", "POST"])
def mcp_new(request: HttpRequest) -> HttpResponse:
    from tools_app.executors.mcp.services import mcp_server_add, parse_headers

    form = McpServerForm(request.POST or None)
    env_form = StdioEnvForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and env_form.is_valid():
        data = form.cleaned_data
        stdio = data["transport"] == "stdio"
        try:
            source = mcp_server_add(
                name=data["name"],
                label=data["label"],
                transport=data["transport"],
                command=data["command"] if stdio else None,
                url="" if stdio else data["url"],
                headers=None if stdio else parse_headers(data["headers"].splitlines()),
                bearer="" if stdio else data["bearer"],
                allow_private=data["allow_private"],
                settings={
                    "sandbox_backend": data["sandbox_backend"],
                    "workspace": data["workspace"],
                    "network": data["network"],
                },
                env=env_form.change,
                user=request.user,
            )
        except SourceError as exc:
            form.add_error(None, str(exc))
        else:
            _queue_refresh(source, request.user.pk)
            messages.success(
                request,
                _("MCP server %(name)s registered; discovering its tools…") % {"name": source.name},
            )
            return redirect(_manager_at(source))
    return render(request, "tools/source_mcp.html", {"form": form, "env_form": env_form})


@access.staff
@require_http_methods(["GET", "POST"])
def openapi_new(request: HttpRequest) -> HttpResponse:
    """Step one: the document (a URL or an upload), answered with its preview and step two."""
    if request.method == "POST" and request.POST.get("step") == "import":
        return _openapi_import(request)
    form = OpenApiForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            preview = openapi_document_preview(
                upload=data["document"],
                document_url=data["document_url"] or "",
                document_private=data["document_private"],
            )
        except SourceError as exc:
            form.add_error(None, str(exc))
        else:
            import_form = OpenApiImportForm.for_preview(
                preview, name=data["name"], label=data["label"], document_url=data["document_url"]
            )
            context = {"preview": preview, "import_form": import_form}
            return render(request, "tools/source_openapi.html", context)
    return render(request, "tools/source_openapi.html", {"form": form})


def _openapi_import(request: HttpRequest) -> HttpResponse:
    """Step two: the chosen operations, where the API is and how to authenticate."""
    try:
        preview, form = OpenApiImportForm.from_post(request.POST)
    except SourceError as exc:
        messages.error(request, str(exc))
        return redirect("tools:openapi_new")
    if form.is_valid():
        try:
            source = openapi_import(user=request.user, **form.import_arguments())
        except SourceError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(
                request,
                _("%(label)s: %(tool_count)s operation(s) imported.")
                % {"label": source.label, "tool_count": source.tool_count},
            )
            return redirect(_manager_at(source))
    return render(request, "tools/source_openapi.html", {"preview": preview, "import_form": form})


@access.staff
@require_POST
def source_refresh(request: HtmxHttpRequest, name: str) -> HttpResponse:
    source = get_object_or_404(ToolSource, name=name)
    if source.kind != ToolSource.Kind.MCP and not (source.config or {}).get("document_url"):
        raise Http404("an uploaded document is imported again, not refreshed")
    _queue_refresh(source, request.user.pk)
    if request.htmx:
        row = manager_selectors.group_row(source.group_name)
        return render(request, "tools/manager.html#group-body", {"row": row})
    messages.success(request, _("Refreshing the tools of %(name)s…") % {"name": source.name})
    return redirect(_manager_at(source))


@access.staff
@require_http_methods(["GET", "POST"])
def source_status(request: HtmxHttpRequest, name: str) -> HttpResponse:
    """The group's body, polled while a refresh is running."""
    source = get_object_or_404(ToolSource, name=name)
    row = manager_selectors.group_row(source.group_name)
    return render(request, "tools/manager.html#group-body", {"row": row})


@access.staff
@require_http_methods(["GET", "POST"])
def source_edit(request: HttpRequest, name: str) -> HttpResponse:
    from tools_app.executors.mcp.services import (
        mcp_env_applied,
        mcp_server_env,
        parse_command,
        parse_headers,
    )
    from tools_app.services.sources import (
        secret_summary,
        source_connection_set,
        source_secrets,
    )

    source = get_object_or_404(ToolSource, name=name)
    if source.kind != ToolSource.Kind.MCP:
        raise Http404("OpenAPI sources are changed by importing the document again")
    config = dict(source.config or {})
    stdio = config.get("transport") == "stdio"
    initial = {"command": " ".join(config.get("command") or []), "url": config.get("url", "")}
    form = McpConnectionForm(request.POST or None, initial=initial)
    env_form = StdioEnvForm(request.POST or None, current=mcp_server_env(source), new_rows=2)
    valid = form.is_valid() and (not stdio or env_form.is_valid())
    if request.method == "POST" and valid:
        data = form.cleaned_data
        secrets = {} if data["clear_secrets"] else source_secrets(source)
        try:
            if stdio:
                config["command"] = parse_command(data["command"])
                config, secrets = mcp_env_applied(config, secrets, env_form.change)
            else:
                config["url"] = data["url"] or config.get("url", "")
                if data["headers"].strip():
                    secrets["headers"] = parse_headers(data["headers"].splitlines())
                if data["bearer"]:
                    secrets["bearer"] = data["bearer"]
            source_connection_set(source, config=config, secrets=secrets, user=request.user)
        except SourceError as exc:
            form.add_error(None, str(exc))
        else:
            _queue_refresh(source, request.user.pk)
            messages.success(
                request, _("%(name)s: connection saved; reconnecting…") % {"name": source.name}
            )
            return redirect(_manager_at(source))
    context = {
        "source": source,
        "form": form,
        "stdio": stdio,
        "stored": secret_summary(source),
        "env_form": env_form,
    }
    return render(request, "tools/source_edit.html", context)


@access.staff
@require_POST
def source_remove(request: HttpRequest, name: str) -> HttpResponse:
    source = get_object_or_404(ToolSource, name=name)
    source_delete(source, user=request.user)
    messages.success(
        request, _("%(value)s removed with its functions.") % {"value": source.label or source.name}
    )
    return redirect("tools:manager")


@access.staff
@require_POST
def function_approval(request: HtmxHttpRequest, tool: str) -> HttpResponse:
    """Who must approve this function's calls. The manager's select posts the mode alone
    (the groups stay); the function page's form posts the groups as well."""
    from tools_app import selectors
    from tools_app.services.settings import SettingsError, function_approval_set
    from tools_app.services.standing import function_standing_set

    found = selectors.tool_named(tool)
    if found is None:
        raise Http404("unknown tool")
    group_ids: list[int] | None = None
    needed: int | None = None
    if "approvers_posted" in request.POST:
        raw = request.POST.getlist("approver_groups")
        group_ids = [int(v) for v in raw if v.isdigit()]
        needed_text = request.POST.get("approvals_needed", "1").strip()
        needed = int(needed_text) if needed_text.isdigit() else 0  # 0: refused as out of range
    try:
        function_approval_set(
            user=request.user,
            tool=tool,
            mode=request.POST.get("approval_mode", ""),
            approver_group_ids=group_ids,
            approvals_needed=needed,
        )
    except SettingsError as exc:
        if request.htmx:  # the select offers only the modes there are
            raise Http404(str(exc)) from None
        messages.error(request, _("%(tool)s: %(error)s") % {"tool": tool, "error": exc})
    else:
        if "approvers_posted" in request.POST:
            function_standing_set(
                user=request.user, tool=tool, forbidden=bool(request.POST.get("standing_forbidden"))
            )
        if not request.htmx:  # the rows swapped in say it themselves
            messages.success(request, _("%(tool)s: approval saved.") % {"tool": tool})
    if request.htmx:
        row = manager_selectors.group_row(found.tool_group)
        return render(request, "tools/manager.html#group-body", {"row": row})
    if group_ids is not None:
        return redirect("tools:function_test", tool=tool)
    return redirect("tools:manager")


@access.staff
@require_POST
def function_limits(request: HttpRequest, tool: str) -> HttpResponse:
    from tools_app import selectors
    from tools_app.services.settings import function_limits_set

    if selectors.tool_named(tool) is None:
        raise Http404("unknown tool")

    def number(key: str) -> int | None:
        raw = request.POST.get(key, "").strip()
        if not raw:
            return None
        if not raw.isdigit() or not 0 < int(raw) <= 86_400:
            raise ValueError(key)
        return int(raw)

    try:
        timeout, per_minute = number("timeout_seconds"), number("calls_per_minute")
    except ValueError as exc:
        messages.error(
            request, _("%(error)s: a whole number from 1 to 86400, or blank") % {"error": exc}
        )
    else:
        function_limits_set(
            user=request.user, tool=tool, timeout_seconds=timeout, calls_per_minute=per_minute
        )
        messages.success(request, _("%(tool)s: limits saved.") % {"tool": tool})
    return redirect("tools:function_test", tool=tool)
