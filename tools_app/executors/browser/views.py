"""Serving screenshots: a conversation's to its owner and to auditors (the permission
``chat_app.audit_conversations``; the read is audited like the page's); a Test run's to the
user who ran it and to staff (Test runs are an admin's). Everyone else gets the same 404 as
for a screenshot that does not exist, so ids reveal nothing."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.http import require_GET

from infra import access
from tools_app.executors.browser.screenshots import screenshot_file
from tools_app.models import Screenshot


def _may_view(user: Any, shot: Screenshot) -> bool:
    if shot.conversation_id is None:  # a Test run's: who ran it, or an admin
        return access.owner(user, shot.user_id) or access.staff_member(user)
    conversation = shot.conversation
    return conversation is not None and access.conversation_read(
        user, conversation, via="screenshot"
    )


def _image_type(magic: bytes) -> str:
    """Screenshots are PNG; images from MCP tools may also be JPEG, GIF or WebP."""
    if magic.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if magic.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if magic.startswith(b"RIFF") and magic[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


@access.signed_in
@require_GET
def screenshot_view(request: HttpRequest, pk: int) -> FileResponse:
    if not access.active(request.user):
        raise Http404("no such screenshot")
    shot = Screenshot.objects.select_related("conversation__owner").filter(pk=pk).first()
    if shot is None or not _may_view(request.user, shot):
        raise Http404("no such screenshot")
    path = screenshot_file(shot)
    if path is None:
        raise Http404("no such screenshot")
    with path.open("rb") as head:
        magic = head.read(12)
    response = FileResponse(path.open("rb"), content_type=_image_type(magic))
    response["Cache-Control"] = "private, max-age=3600"
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response
