"""Pages and actions about whole conversations: the sidebar's groups, pin, archive, search,
export and import, share links. Every one is the owner's only (404 for anyone else)."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from chat_app import selectors
from chat_app.models import Conversation
from chat_app.services import conversations as services
from chat_app.services import sharing, transfer
from chat_app.services.search import conversations_search
from chat_app.views import AuthedHtmxRequest, _owned, _sidebar_context
from infra import access


def _list_or_redirect(request: AuthedHtmxRequest, conversation: Conversation) -> HttpResponse:
    if request.htmx:
        return render(
            request,
            "chat/page.html#conversation-list",
            _sidebar_context(request, conversation),
        )
    return redirect("chat:conversation", conversation_id=conversation.pk)


@access.signed_in
@require_POST
def conversation_pin(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    services.conversation_pin(conversation, pinned=request.POST.get("pinned", "1") == "1")
    return _list_or_redirect(request, conversation)


@access.signed_in
@require_POST
def conversation_archive(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    archived = request.POST.get("archived", "1") == "1"
    services.conversation_archive(conversation, archived=archived)
    if archived:
        return redirect("chat:archived")
    return redirect("chat:conversation", conversation_id=conversation.pk)


@access.signed_in
def archived(request: AuthedHtmxRequest) -> HttpResponse:
    return render(
        request,
        "chat/archived.html",
        {"archived": selectors.archived_conversations(request.user)[:500]},
    )


@access.signed_in
def search(request: AuthedHtmxRequest) -> HttpResponse:
    """The sidebar's results as you type (htmx), or the results page (a plain GET)."""
    query = request.GET.get("q", "")[:200]
    hits = conversations_search(owner_id=request.user.pk, query=query) if query.strip() else []
    context = {"query": query, "hits": hits}
    if request.htmx:
        return render(request, "chat/search.html#search-hits", context)
    return render(request, "chat/search.html", context)


def _filename(conversation: Conversation, extension: str) -> str:
    stem = slugify(conversation.title)[:60] or "conversation"
    return f"{stem}-{conversation.pk}.{extension}"


@access.signed_in
def export(request: AuthedHtmxRequest, conversation_id: int, fmt: str) -> HttpResponse:
    conversation = _owned(request, conversation_id)
    if fmt == "json":
        body, content_type = transfer.export_json(conversation), "application/json"
    elif fmt == "md":
        body, content_type = transfer.export_markdown(conversation), "text/markdown"
    else:
        raise Http404("unknown export format")
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    name = _filename(conversation, fmt)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@access.signed_in
def import_page(request: AuthedHtmxRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        upload = request.FILES.get("file")
        if upload is None:
            error = "Choose a JSON file exported from Control Center."
        elif upload.size is not None and upload.size > transfer.MAX_IMPORT_BYTES:
            error = f"The file is larger than {transfer.MAX_IMPORT_BYTES // (1024 * 1024)} MB."
        else:
            try:
                conversation = transfer.import_conversation(
                    owner=request.user, raw=upload.read(transfer.MAX_IMPORT_BYTES + 1)
                )
            except transfer.ImportError_ as exc:
                error = f"Not imported: {exc}"
            else:
                return redirect("chat:conversation", conversation_id=conversation.pk)
    status = 400 if error else 200
    return render(request, "chat/import.html", {"error": error}, status=status)


@access.signed_in
def share(request: AuthedHtmxRequest, conversation_id: int) -> HttpResponse:
    """The owner's page for the conversation's share link: create, replace, revoke."""
    conversation = _owned(request, conversation_id)
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            sharing.share_revoke(conversation)
        else:
            sharing.share_create(
                conversation, include_tools=request.POST.get("include_tools") == "on"
            )
        return redirect("chat:share", conversation_id=conversation.pk)
    active = sharing.share_active(conversation)
    link = request.build_absolute_uri(f"/s/{active.token}/") if active else ""
    return render(
        request, "chat/share.html", {"conversation": conversation, "share": active, "link": link}
    )


@access.signed_in
def shared(request: AuthedHtmxRequest, token: str) -> HttpResponse:
    """A conversation through its share link: read-only, as its owner chose to show it. The
    link is the owner's consent, so reading needs no auditor permission (and is not one)."""
    link = sharing.share_for_token(token)
    if link is None:
        raise Http404("no such shared conversation")
    conversation = link.conversation
    messages = [
        (message, list(message.tool_calls.all()) if link.include_tools else [])
        for message in selectors.conversation_messages(conversation)
    ]
    return render(
        request,
        "chat/shared.html",
        {"conversation": conversation, "share": link, "shared_messages": messages},
    )
