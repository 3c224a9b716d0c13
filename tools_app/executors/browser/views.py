"""Serving screenshots: only to the conversation's owner (or, for Test runs, the user who
ran them) and to staff; everyone else gets the same 404 as for a screenshot that does not
exist, so ids reveal nothing."""

from __future__ import annotations

from django.http import FileResponse, Http404, HttpRequest
from django.views.decorators.http import require_GET

from tools_app.executors.browser.screenshots import screenshot_file
from tools_app.models import Screenshot


def _may_view(user: object, shot: Screenshot) -> bool:
    if getattr(user, "is_staff", False):
        return True
    user_id = getattr(user, "pk", None)
    if shot.conversation_id is not None:
        return shot.conversation is not None and shot.conversation.owner_id == user_id
    return shot.user_id is not None and shot.user_id == user_id


def _image_type(magic: bytes) -> str:
    """Screenshots are PNG; images from MCP tools may also be JPEG, GIF or WebP."""
    if magic.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if magic.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if magic.startswith(b"RIFF") and magic[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


@require_GET
def screenshot_view(request: HttpRequest, pk: int) -> FileResponse:
    if not request.user.is_authenticated:
        raise Http404("no such screenshot")
    shot = Screenshot.objects.select_related("conversation").filter(pk=pk).first()
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
