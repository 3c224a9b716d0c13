"""A member's own agent profiles and prompt library (My agents, My prompts). Views parse the
form, call a service and redirect; a refused change comes back as an error on the page.
Someone else's profile or prompt answers 404, as if it did not exist."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.models import Agent, Prompt
from chat_app.services import member_agents, prompts
from chat_app.services.member_agents import AgentDraft, MemberAgentError
from chat_app.services.prompts import PromptDraft
from infra import access


def _ids(values: list[str]) -> list[int]:
    # A value that is not a number names no group anyone may share with: refused as such.
    return [int(v) if v.isascii() and v.isdigit() else -1 for v in values]


def _agent_draft(request: HttpRequest) -> AgentDraft:
    post = request.POST
    return AgentDraft(
        name=post.get("name", ""),
        description=post.get("description", ""),
        system_prompt=post.get("system_prompt", ""),
        model=post.get("model", ""),
        tools=post.getlist("tools"),
        sources=post.getlist("sources"),
        groups=_ids(post.getlist("groups")),
    )


def _agent_page(
    request: HttpRequest, *, agent: Agent | None, draft: AgentDraft | None, status: int = 200
) -> HttpResponse:
    options = member_agents.agent_options(request.user)
    if draft is None:
        draft = member_agents.agent_draft_of(agent, options) if agent else AgentDraft(name="")
    context: dict[str, Any] = {
        "agent": agent,
        "draft": draft,
        "options": options,
        "mine": member_agents.my_agents(request.user),
        "shared": member_agents.shared_with_me(request.user),
    }
    return render(request, "chat/my_agents.html", context, status=status)


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_agents(request: HttpRequest) -> HttpResponse:
    """The person's profiles, those shared with them, and the form of a new one."""
    if request.method != "POST":
        return _agent_page(request, agent=None, draft=None)
    draft = _agent_draft(request)
    try:
        agent = member_agents.my_agent_save(user=request.user, draft=draft)
    except MemberAgentError as exc:
        messages.error(request, exc.message)
        return _agent_page(request, agent=None, draft=draft, status=400)
    messages.success(request, _("Agent “%(name)s” saved.") % {"name": agent.name})
    return redirect("chat:my-agent", agent_id=agent.pk)


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_agent(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = member_agents.my_agent(request.user, agent_id)
    if agent is None:
        raise Http404("agent profile not found")
    if request.method != "POST":
        return _agent_page(request, agent=agent, draft=None)
    draft = _agent_draft(request)
    try:
        member_agents.my_agent_save(user=request.user, draft=draft, agent=agent)
    except MemberAgentError as exc:
        messages.error(request, exc.message)
        agent.refresh_from_db()
        return _agent_page(request, agent=agent, draft=draft, status=400)
    messages.success(request, _("Agent “%(name)s” saved.") % {"name": agent.name})
    return redirect("chat:my-agent", agent_id=agent.pk)


@access.signed_in
@require_POST
def my_agent_delete(request: HttpRequest, agent_id: int) -> HttpResponse:
    agent = member_agents.my_agent(request.user, agent_id)
    if agent is None:
        raise Http404("agent profile not found")
    name = agent.name
    member_agents.my_agent_delete(user=request.user, agent=agent)
    messages.success(request, _("Agent “%(name)s” deleted.") % {"name": name})
    return redirect("chat:my-agents")


# --- prompts ---------------------------------------------------------------------------------
def _prompt_draft(request: HttpRequest) -> PromptDraft:
    post = request.POST
    return PromptDraft(
        title=post.get("title", ""),
        body=post.get("body", ""),
        shortcut=post.get("shortcut", ""),
        groups=_ids(post.getlist("groups")),
    )


def _prompt_page(
    request: HttpRequest, *, prompt: Prompt | None, draft: PromptDraft | None, status: int = 200
) -> HttpResponse:
    if draft is None:
        draft = prompts.prompt_draft_of(prompt) if prompt else PromptDraft(title="", body="")
    context: dict[str, Any] = {
        "prompt": prompt,
        "draft": draft,
        "library": prompts.prompts_for(request.user),
        "share_groups": member_agents.shareable_groups(request.user),
    }
    return render(request, "chat/my_prompts.html", context, status=status)


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_prompts(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _prompt_page(request, prompt=None, draft=None)
    draft = _prompt_draft(request)
    try:
        prompt = prompts.prompt_save(user=request.user, draft=draft)
    except MemberAgentError as exc:
        messages.error(request, exc.message)
        return _prompt_page(request, prompt=None, draft=draft, status=400)
    messages.success(request, _("Prompt “%(title)s” saved.") % {"title": prompt.title})
    return redirect("chat:my-prompts")


@access.signed_in
@require_http_methods(["GET", "POST"])
def my_prompt(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = prompts.my_prompt(request.user, prompt_id)
    if prompt is None:
        raise Http404("prompt not found")
    if request.method != "POST":
        return _prompt_page(request, prompt=prompt, draft=None)
    draft = _prompt_draft(request)
    try:
        prompts.prompt_save(user=request.user, draft=draft, prompt=prompt)
    except MemberAgentError as exc:
        messages.error(request, exc.message)
        return _prompt_page(request, prompt=prompt, draft=draft, status=400)
    messages.success(request, _("Prompt “%(title)s” saved.") % {"title": prompt.title})
    return redirect("chat:my-prompts")


@access.signed_in
@require_POST
def my_prompt_delete(request: HttpRequest, prompt_id: int) -> HttpResponse:
    prompt = prompts.my_prompt(request.user, prompt_id)
    if prompt is None:
        raise Http404("prompt not found")
    title = prompt.title
    prompts.prompt_delete(user=request.user, prompt=prompt)
    messages.success(request, _("Prompt “%(title)s” deleted.") % {"title": title})
    return redirect("chat:my-prompts")
