"""Pages and actions about whole conversations: the sidebar's groups, pin, archive, search,
export and import, share links. Every one is the owner's only (404 for anyone else)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from chat_app import selectors
from chat_app.models import Conversation
from chat_app.services import conversations as services
from chat_app.services import history_import, sharing, transfer
from chat_app.services.history_import import formats as import_formats
from chat_app.services.search import conversations_search
from chat_app.views import AuthedHtmxRequest, _owned, _sidebar_context
from infra import access

IMPORT_FORMATS = [
    ("auto", gettext_lazy("Recognise it")),
    ("openwebui", "Open WebUI"),
    ("chatgpt", "ChatGPT (conversations.json)"),
    ("librechat", "LibreChat"),
    ("controlcenter", "Control Center"),
]
# The summary's words for what was skipped (the service counts in English keys).
SKIP_REASONS = {
    import_formats.SKIP_SYSTEM: gettext_lazy("system prompt"),
    import_formats.SKIP_TOOL: gettext_lazy("tool call or tool output"),
    import_formats.SKIP_REASONING: gettext_lazy("reasoning"),
    import_formats.SKIP_IMAGE: gettext_lazy("image or file"),
    import_formats.SKIP_HIDDEN: gettext_lazy("hidden message"),
    import_formats.SKIP_EMPTY: gettext_lazy("empty message"),
    import_formats.SKIP_OTHER: gettext_lazy("other content"),
    history_import.importer.SKIP_ALREADY: gettext_lazy("already imported"),
    history_import.importer.SKIP_NO_TEXT: gettext_lazy("no text messages"),
}


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


def _import_target(request: AuthedHtmxRequest) -> Any:
    """The account to import into: one's own, or (an admin) the one named in ``into``. None
    when no active account has that name; PermissionDenied when it is not one's to choose."""
    into = request.POST.get("into", "").strip()
    if not into or into == request.user.get_username():
        return request.user
    target = get_user_model().objects.filter(username=into, is_active=True).first()
    owner_id = target.pk if target is not None else None
    if not access.history_import_into(request.user, owner_id=owner_id):
        raise PermissionDenied
    return target


def _skipped(counts: dict[str, int]) -> list[tuple[int, str]]:
    return [(count, str(SKIP_REASONS.get(reason, reason))) for reason, count in counts.items()]


@access.signed_in
def import_page(request: AuthedHtmxRequest) -> HttpResponse:
    """Import history: a Control Center export, or Open WebUI's, ChatGPT's or LibreChat's
    (chat_app.services.history_import); a summary of what came in and what was skipped."""
    error, summary = "", None
    fmt = request.POST.get("format", "auto")
    if request.method == "POST":
        try:
            owner = _import_target(request)
        except PermissionDenied:
            return access.forbidden(request, _("You can import only into your own account."))
        upload = request.FILES.get("file")
        if owner is None:
            error = _("No active account has that name.")
        elif fmt not in history_import.FORMATS:
            error = _("Choose one of the formats.")
        elif upload is None:
            error = _("Choose an export file (JSON).")
        elif upload.size is not None and upload.size > history_import.MAX_IMPORT_BYTES:
            error = _("The file is larger than %(mb)s MB.") % {
                "mb": history_import.MAX_IMPORT_BYTES // (1024 * 1024)
            }
        else:
            try:
                summary = history_import.history_import(
                    owner=owner,
                    raw=upload.read(history_import.MAX_IMPORT_BYTES + 1),
                    fmt=fmt,
                    actor=request.user,
                    via="page",
                )
            except history_import.HistoryImportError as exc:
                error = _("Not imported: %(reason)s") % {"reason": exc}
            else:
                one = summary.conversations[0] if len(summary.conversations) == 1 else None
                if summary.format == "controlcenter" and one is not None and owner == request.user:
                    return redirect("chat:conversation", conversation_id=one.pk)
    context = {
        "error": error,
        "summary": summary,
        "format": fmt,
        "formats": IMPORT_FORMATS,
        "may_choose_account": access.staff_member(request.user),
        # Lists, not the Counters: a template's ``.items`` on a Counter is its count of "items".
        "skipped_conversations": _skipped(summary.skipped_conversations if summary else {}),
        "skipped_messages": _skipped(summary.skipped_messages if summary else {}),
    }
    return render(request, "chat/import.html", context, status=400 if error else 200)


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
