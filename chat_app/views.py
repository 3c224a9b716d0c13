from __future__ import annotations

import logging
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from chat_app import selectors
from chat_app.agent_kinds import turn_plan_html
from chat_app.forms import AgentChoiceForm, RenameForm
from chat_app.models import Conversation
from chat_app.pages import page_panels
from chat_app.services import privacy
from chat_app.services.agents import agent_default_pinned
from chat_app.services.conversations import Group, sidebar_groups
from chat_app.services.prompts import slash_menu
from chat_app.services.providers import (
    conversation_model_choose,
    model_choices,
    provider_for_conversation,
)
from infra import access
from tools_app.selectors import config_pinned

logger = logging.getLogger(__name__)


class AuthedHtmxRequest(HttpRequest):
    """What a view behind login_required with django-htmx's middleware gets."""

    user: Any
    htmx: HtmxDetails


def sidebar_source(request: AuthedHtmxRequest, conversation: Conversation | None) -> str:
    """The sidebar's list: the one the open conversation is in (the chat's, or the API's),
    the chat's when it is someone else's."""
    if conversation is not None and conversation.owner_id == request.user.pk:
        return str(conversation.source)
    return str(Conversation.Source.CHAT)


def sidebar_groups_for(
    request: AuthedHtmxRequest, conversation: Conversation | None = None
) -> list[Group]:
    """The sidebar's conversations, grouped (Pinned, Today, Yesterday, …), of its list."""
    source = sidebar_source(request, conversation)
    return sidebar_groups(selectors.sidebar_conversations(request.user, source))


def _sidebar_context(request: AuthedHtmxRequest, conversation: Conversation) -> dict[str, Any]:
    return {
        "conversation": conversation,
        "conversation_groups": sidebar_groups_for(request, conversation),
        "has_api_conversations": selectors.has_api_conversations(request.user),
        "sidebar_source": sidebar_source(request, conversation),
    }


def _owned(request: AuthedHtmxRequest, conversation_id: int) -> Conversation:
    conversation = selectors.conversation_for(request.user, conversation_id)
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


@access.signed_in
def index(request: AuthedHtmxRequest) -> HttpResponse:
    latest = selectors.latest_conversation(request.user)
    if latest is None:
        latest = Conversation.objects.create(owner=request.user)
    return redirect("chat:conversation", conversation_id=latest.pk)


@access.signed_in
def api_list(request: AuthedHtmxRequest) -> HttpResponse:
    """The sidebar's API tab: the latest conversation a program started (none: the chat)."""
    latest = selectors.latest_conversation(request.user, Conversation.Source.API)
    if latest is None:
        return redirect("chat:index")
    return redirect("chat:conversation", conversation_id=latest.pk)


@access.signed_in
@require_POST
def conversation_new(request: AuthedHtmxRequest) -> HttpResponse:
    conversation = Conversation.objects.create(owner=request.user)
    return redirect("chat:conversation", conversation_id=conversation.pk)


@access.signed_in
def conversation_page(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    conversation = privacy.conversation_read(
        user=request.user, conversation_id=conversation_id, via="page"
    )
    if conversation is None:
        raise Http404("conversation not found")
    # One tool configuration for the whole page: checked against the stored token once, not
    # once for each part that reads it (the slash menu, the panels, the approvals badge).
    with config_pinned():
        return _conversation_page(request, conversation)


def _conversation_page(request: AuthedHtmxRequest, conversation: Conversation) -> HttpResponse:
    default_agent = agent_default_pinned()  # there is always at least "General" to pick
    running, latest = selectors.turn_state(conversation)
    return render(
        request,
        "chat/page.html",
        {
            "conversation": conversation,
            "conversation_groups": sidebar_groups_for(request, conversation),
            "has_api_conversations": selectors.has_api_conversations(request.user),
            "sidebar_source": sidebar_source(request, conversation),
            "messages": selectors.conversation_messages(conversation),
            "running": running is not None,
            "waiting": selectors.turn_waiting(running),
            "plan_html": turn_plan_html(conversation, latest),
            "provider": provider_for_conversation(conversation),
            "read_only": conversation.owner_id != request.user.pk,
            # The "/" menu of the message box: slash commands and the prompt library.
            "slash_menu": (
                slash_menu(request.user) if conversation.owner_id == request.user.pk else None
            ),
            "agent_form": AgentChoiceForm(
                instance=conversation,
                initial={"agent": conversation.agent or default_agent},
                user=request.user,
            ),
            # What the apps above the chat show beside it (the platform: schedules, reports).
            **page_panels(request, conversation),
        },
    )


@access.signed_in
@require_POST
def conversation_agent(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    """Pick the agent profile a conversation uses (from its next model round on)."""
    conversation = _owned(request, conversation_id)
    form = AgentChoiceForm(request.POST, instance=conversation, user=request.user)
    saved = form.is_valid()
    if saved:
        form.save()
    return render(
        request,
        "chat/page.html#agent-bar",
        {"conversation": conversation, "agent_form": form, "agent_saved": saved},
    )


@access.signed_in
@require_http_methods(["GET", "POST"])
def conversation_model(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    """The model switcher: the models on offer (GET; POST refresh=1 asks the providers again),
    or pick one for the conversation's next rounds (POST model=provider_id:model)."""
    if request.method == "GET":
        # The page loads the list after it shows; a conversation deleted (or not the
        # person's) by then gets nothing to swap in, not an error.
        found = selectors.conversation_for(request.user, conversation_id)
        if found is None:
            return HttpResponse(status=204)
        conversation = found
    else:
        conversation = _owned(request, conversation_id)
    refresh = request.method == "POST" and bool(request.POST.get("refresh"))
    context: dict[str, Any] = {"conversation": conversation}
    status = 200
    if request.method == "POST" and not refresh:
        try:
            conversation_model_choose(
                conversation=conversation, value=str(request.POST.get("model", ""))
            )
            context["model_saved"] = True
        except ValueError as exc:
            conversation.refresh_from_db()
            context["model_error"] = str(exc)
            logger.warning(
                "user %s: model choice %r refused in conversation %s",
                request.user.pk,
                str(request.POST.get("model", ""))[:200],
                conversation.pk,
            )
            status = 200 if request.htmx else 400  # htmx swaps only a 2xx: show the error
    choices, problems = model_choices(refresh=refresh)
    value = f"{conversation.provider_id}:{conversation.model}" if conversation.model else ""
    context.update(model_choices=choices, model_problems=problems, model_value=value)
    return render(request, "chat/_model_bar.html", context, status=status)


@access.signed_in
@require_POST
def conversation_rename(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    form = RenameForm(request.POST, instance=conversation)
    if form.is_valid():
        form.save()
    else:
        conversation.refresh_from_db()
    return render(
        request,
        "chat/page.html#conversation-list",
        _sidebar_context(request, conversation),
    )


@access.signed_in
@require_POST
def conversation_delete(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    conversation.delete()
    if request.htmx:
        return HttpResponseClientRedirect("/")
    return redirect("chat:index")
