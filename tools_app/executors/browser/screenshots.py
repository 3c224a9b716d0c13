"""Screenshot files and records: stored under ``MEDIA_DIR/screenshots/<workspace>/``, capped
per conversation, served only to the conversation's owner and to staff (``views.py``)."""

from __future__ import annotations

import base64
import contextlib
import struct
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings as django_settings
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.urls import NoReverseMatch, reverse

from tools_app.errors import ToolError
from tools_app.models import Screenshot
from tools_app.runtime import ActivityContext

URL_NAME = "browser-screenshot"


def media_dir() -> Path:
    return Path(django_settings.MEDIA_DIR)


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the PNG header (IHDR is always the first chunk)."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        raise ToolError("the browser returned something that is not a PNG image")
    width, height = struct.unpack(">II", png[16:24])
    return int(width), int(height)


def screenshot_url(pk: int) -> str:
    try:
        return reverse(URL_NAME, args=[pk])
    except NoReverseMatch:
        return f"/media/screenshots/{pk}/"


def _taken(ctx: ActivityContext) -> int:
    if ctx.conversation_id is not None:
        return Screenshot.objects.filter(conversation_id=ctx.conversation_id).count()
    mine = Screenshot.objects.filter(conversation__isnull=True)
    if ctx.user_id is None:
        return mine.filter(user__isnull=True).count()
    return mine.filter(user_id=ctx.user_id).count()


def screenshot_check_cap(*, ctx: ActivityContext, limit: int) -> None:
    taken = _taken(ctx)
    if taken >= limit:
        where = "this conversation" if ctx.conversation_id is not None else "Test runs"
        raise ToolError(
            f"screenshot limit reached: {where} already has {taken} screenshot(s) and an "
            f"administrator allows {limit}; use browser_extract to read the page instead"
        )


def screenshot_store(*, ctx: ActivityContext, png: bytes) -> Screenshot:
    width, height = png_size(png)
    relative = Path("screenshots") / ctx.workspace_id / f"{ctx.call_id}-{uuid.uuid4().hex[:12]}.png"
    target = media_dir() / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(png)
    target.chmod(0o600)
    return Screenshot.objects.create(
        tool_call_id=ctx.call_id,
        conversation_id=ctx.conversation_id,
        user_id=ctx.user_id,
        path=relative.as_posix(),
        width=width,
        height=height,
        bytes=len(png),
    )


def screenshot_result(shot: Screenshot) -> dict[str, Any]:
    """What the model and the card get: a reference, never the image itself."""
    return {
        "id": shot.pk,
        "url": screenshot_url(shot.pk),
        "width": shot.width,
        "height": shot.height,
        "bytes": shot.bytes,
        "path": shot.path,
        "mime_type": "image/png",
    }


def screenshot_file(shot: Screenshot) -> Path | None:
    root = media_dir().resolve()
    path = (root / shot.path).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


def images_for_model(result: dict[str, Any], *, send_images: bool) -> list[dict[str, Any]]:
    """For providers with image input: the screenshot of a browser result as base64, when the
    admin enabled ``send_images_to_model`` (pass the Browser group's setting). Empty
    otherwise: the model then only reads the path and size in the result."""
    info = result.get("screenshot")
    if not send_images or not isinstance(info, dict) or not isinstance(info.get("id"), int):
        return []
    shot = Screenshot.objects.filter(pk=info["id"]).first()
    path = screenshot_file(shot) if shot is not None else None
    if path is None:
        return []
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return [
        {"mime_type": "image/png", "data": data, "width": info["width"], "height": info["height"]}
    ]


@receiver(post_delete, sender=Screenshot, dispatch_uid="browser-screenshot-file")
def _delete_file(sender: type[Screenshot], instance: Screenshot, **kwargs: Any) -> None:
    path = screenshot_file(instance)
    if path is not None:
        with contextlib.suppress(OSError):
            path.unlink()
