"""The agent-profile and provider pages (staff only). Views parse with a form, call a service
and redirect; a refused change comes back as an error on the page, losing nothing typed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.admin_pages import selectors, services
from chat_app.admin_pages.forms import AgentPageForm, ProviderPageForm
from chat_app.admin_pages.services import AdminPageError
from chat_app.models import Agent, Provider
from chat_app.services.provider_probe import provider_test as probe
from infra import access

V = TypeVar("V", bound=Callable[..., HttpResponseBase])


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"  # forms of a secret: keep them out of caches
    return response


# --- providers -------------------------------------------------------------------------------
@access.staff
def providers(request: HttpRequest) -> HttpResponse:
    return render(request, "agents/providers.html", {"rows": selectors.provider_rows()})


def _provider_page(
    request: HttpRequest,
    form: ProviderPageForm,
    provider: Provider | None,
    *,
    result: Any = None,
    status: int = 200,
) -> HttpResponse:
    context = {"form": form, "provider": provider, "result": result}
    return _no_store(render(request, "agents/provider_edit.html", context, status=status))


def _provider_post(request: HttpRequest, provider: Provider | None) -> HttpResponse:
    form = ProviderPageForm(request.POST, instance=provider or Provider())
    if not form.is_valid():
        return _provider_page(request, form, provider, status=400)
    try:
        saved = services.provider_save(actor=request.user, form=form)
    except AdminPageError as exc:
        messages.error(request, str(exc))
        return _provider_page(request, form, provider, status=400)
    messages.success(request, _("Saved provider %(name)s.") % {"name": saved.name})
    return redirect("agents:provider", provider_id=saved.pk)


@access.staff
@require_http_methods(["GET", "POST"])
def provider_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _provider_post(request, None)
    first = not Provider.objects.exists()
    return _provider_page(request, ProviderPageForm(initial={"is_default": first}), None)


@access.staff
@require_http_methods(["GET", "POST"])
def provider_edit(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = get_object_or_404(Provider, pk=provider_id)
    if request.method == "POST":
        return _provider_post(request, provider)
    return _provider_page(request, ProviderPageForm(instance=provider), provider)


@access.staff
@require_POST
def provider_test(request: HttpRequest, provider_id: int) -> HttpResponse:
    """Test connection, from the server with a short timeout (the base URL is the admin's to
    choose, loopback included: these pages are staff-only)."""
    provider = get_object_or_404(Provider, pk=provider_id)
    result = probe(provider)
    return _provider_page(request, ProviderPageForm(instance=provider), provider, result=result)


@access.staff
@require_POST
def provider_delete(request: HttpRequest, provider_id: int) -> HttpResponse:
    provider = get_object_or_404(Provider, pk=provider_id)
    name = provider.name
    services.provider_delete(actor=request.user, provider=provider)
    messages.success(request, _("Deleted provider %(name)s.") % {"name": name})
    return redirect("agents:providers")


# --- agent profiles --------------------------------------------------------------------------
@access.staff
def agents(request: HttpRequest) -> HttpResponse:
    return render(request, "agents/agents.html", {"rows": selectors.agent_rows()})


def _agent_page(
    request: HttpRequest,
    form: AgentPageForm,
    agent: Agent | None,
    *,
    chosen: set[str],
    budgets: str,
    status: int = 200,
) -> HttpResponse:
    groups, unknown = selectors.tool_choices(chosen)
    context = {
        "form": form,
        "agent": agent,
        "groups": groups,
        "unknown_tools": unknown,
        "budgets": budgets,
        "tool_count": sum(len(g.tools) for g in groups),
    }
    return render(request, "agents/agent_edit.html", context, status=status)


def _agent_post(request: HttpRequest, agent: Agent | None) -> HttpResponse:
    form = AgentPageForm(request.POST, instance=agent or Agent())
    tools = request.POST.getlist("tool")
    groups = request.POST.getlist("tool_group")
    budgets_raw = request.POST.get("tool_budgets", "")
    chosen = set(tools) | {n for g in groups for n in selectors.group_functions().get(g, [])}
    error = ""
    if form.is_valid():
        try:
            names = services.tools_chosen(
                all_tools=form.cleaned_data["all_tools"],
                tools=tools,
                groups=groups,
                known_groups=selectors.group_functions(),
            )
            budgets = services.budgets_parse(budgets_raw)
            saved = services.agent_save(actor=request.user, form=form, tools=names, budgets=budgets)
        except AdminPageError as exc:
            error = str(exc)
        else:
            messages.success(request, _("Saved agent profile %(name)s.") % {"name": saved.name})
            return redirect("agents:agent", agent_id=saved.pk)
    if error:
        messages.error(request, error)
    return _agent_page(request, form, agent, chosen=chosen, budgets=budgets_raw, status=400)


@access.staff
@require_http_methods(["GET", "POST"])
def agent_new(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _agent_post(request, None)
    form = AgentPageForm(instance=Agent())
    budgets = services.budgets_text(form.instance.tool_budgets)
    return _agent_page(request, form, None, chosen=set(), budgets=budgets)


@access.staff
@require_http_methods(["GET", "POST"])
def agent_edit(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(Agent, pk=agent_id)
    if request.method == "POST":
        return _agent_post(request, agent)
    return _agent_page(
        request,
        AgentPageForm(instance=agent),
        agent,
        chosen=set(agent.tools or []),
        budgets=services.budgets_text(agent.tool_budgets),
    )


@access.staff
@require_POST
def agent_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = get_object_or_404(Agent, pk=agent_id)
    name = agent.name
    try:
        services.agent_delete(actor=request.user, agent=agent)
    except AdminPageError as exc:
        messages.error(request, str(exc))
        return redirect("agents:agent", agent_id=agent.pk)
    messages.success(request, _("Deleted agent profile %(name)s.") % {"name": name})
    return redirect("agents:agents")
