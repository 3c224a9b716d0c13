"""The conversation's files: upload into its workspace (owner only), the Files panel and
downloads (the owner, or an auditor whose read is recorded, like the page itself).

An upload is the request body itself (``POST …/files/?name=…``, what the page's script
sends), or a multipart form with a ``file`` field (a page without script). Either way the
body is copied to the workspace in chunks (``chat_app.services.uploads``)."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from chat_app.models import Conversation
from chat_app.services import privacy, uploads
from infra import access
from infra.safe_files import Missing, Refused


def files_context(request: HttpRequest, conversation: Conversation) -> dict[str, Any]:
    """The Files panel's context (registered as a page panel of the chat page)."""
    return {
        "files": uploads.workspace_listing(conversation),
        "upload_max_bytes": uploads.upload_max_bytes(),
        "upload_types": " ".join(f".{t}" for t in uploads.upload_allowed_types() if t != "*"),
    }


def _readable(request: HttpRequest, conversation_id: int, via: str) -> Conversation:
    conversation = privacy.conversation_read(
        user=request.user, conversation_id=conversation_id, via=via
    )
    if conversation is None:
        raise Http404("conversation not found")
    return conversation


@access.signed_in
@require_GET
def files_panel(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = _readable(request, conversation_id, "files")
    context = {
        "conversation": conversation,
        "read_only": conversation.owner_id != request.user.pk,
        **files_context(request, conversation),
    }
    return render(request, "chat/_files.html", context)


@access.signed_in
@require_GET
def file_download(request: HttpRequest, conversation_id: int, path: str) -> FileResponse:
    conversation = _readable(request, conversation_id, f"file {path}"[:200])
    try:
        handle, size = uploads.workspace_file_open(conversation, path)
    except (Missing, Refused, OSError):
        raise Http404("file not found") from None
    # Always a download, never rendered here: an uploaded .html or .svg must not run as
    # this site's page.
    response = FileResponse(
        handle,
        as_attachment=True,
        filename=path.rsplit("/", 1)[-1],
        content_type="application/octet-stream",
    )
    response["Content-Length"] = str(size)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "sandbox; default-src 'none'"
    return response


@access.signed_in
@require_POST
def file_upload(request: HttpRequest, conversation_id: int) -> HttpResponse:
    conversation = Conversation.objects.filter(pk=conversation_id, owner_id=request.user.pk).first()
    if conversation is None:  # someone else's (an auditor only reads), or gone
        raise Http404("conversation not found")
    declared = request.META.get("CONTENT_LENGTH") or ""
    try:
        if request.content_type == "multipart/form-data":
            upload = request.FILES.get("file")
            if upload is None:
                raise uploads.UploadError(_("no file in the form (field 'file')"))
            stored = uploads.upload_store(
                conversation=conversation,
                name=upload.name or "",
                body=upload,
                declared_size=upload.size,
            )
        else:
            stored = uploads.upload_store(
                conversation=conversation,
                name=request.GET.get("name", ""),
                body=request,
                declared_size=int(declared) if declared.isdigit() else None,
            )
    except uploads.UploadError as exc:
        uploads.logger.warning(
            "upload refused in conversation %s for %s: %s",
            conversation.pk,
            request.user,
            exc.message,
        )
        return JsonResponse({"error": exc.message}, status=exc.status)
    return JsonResponse({"file": stored.as_attachment()}, status=201)
