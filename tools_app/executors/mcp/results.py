"""An MCP tool result as our result dict: text, images (stored, shown inline on the card),
embedded resources, resource links and structured content."""

from __future__ import annotations

import base64
import binascii
import uuid
from pathlib import Path
from typing import Any

from tools_app.runtime import ActivityContext

MAX_IMAGES = 8
MAX_IMAGE_BYTES = 5_000_000
TEXT_LIMIT = 200_000
_IMAGE_EXT = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


def _store_image(ctx: ActivityContext, data: bytes, mime: str) -> dict[str, Any]:
    from tools_app.executors.browser.screenshots import media_dir, png_size, screenshot_url
    from tools_app.models import Screenshot

    width = height = 0
    if mime == "image/png":
        try:
            width, height = png_size(data)
        except Exception:
            return {"type": "image", "mime_type": mime, "note": "not a valid PNG; not shown"}
    ext = _IMAGE_EXT[mime]
    relative = Path("mcp") / ctx.workspace_id / f"{ctx.call_id}-{uuid.uuid4().hex[:12]}.{ext}"
    target = media_dir() / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    target.chmod(0o600)
    shot = Screenshot.objects.create(
        tool_call_id=ctx.call_id,
        conversation_id=ctx.conversation_id,
        user_id=ctx.user_id,
        path=relative.as_posix(),
        width=width,
        height=height,
        bytes=len(data),
    )
    return {
        "type": "image",
        "id": shot.pk,
        "url": screenshot_url(shot.pk),
        "mime_type": mime,
        "bytes": len(data),
    }


def _image(ctx: ActivityContext, block: Any, count: int) -> dict[str, Any]:
    mime = str(getattr(block, "mime_type", "") or "")
    if count >= MAX_IMAGES:
        return {"type": "image", "mime_type": mime, "note": "image limit reached; not kept"}
    if mime not in _IMAGE_EXT:
        return {"type": "image", "mime_type": mime, "note": "image type not shown"}
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return {"type": "image", "mime_type": mime, "note": "invalid base64 data"}
    if len(data) > MAX_IMAGE_BYTES:
        return {"type": "image", "mime_type": mime, "note": f"{len(data)} bytes; too large"}
    return _store_image(ctx, data, mime)


def _resource(contents: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "resource", "uri": str(getattr(contents, "uri", ""))}
    mime = getattr(contents, "mime_type", None)
    if mime:
        out["mime_type"] = mime
    text = getattr(contents, "text", None)
    if text is not None:
        out["text"] = str(text)[:TEXT_LIMIT]
    else:
        blob = str(getattr(contents, "blob", "") or "")
        out["bytes"] = len(blob) * 3 // 4
    return out


def convert_result(result: Any, ctx: ActivityContext) -> tuple[dict[str, Any], bool]:
    """(our result fields, is_error)."""
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    images = 0
    for block in getattr(result, "content", None) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(str(block.text))
        elif kind == "image":
            part = _image(ctx, block, images)
            images += 1 if "id" in part else 0
            parts.append(part)
        elif kind == "audio":
            parts.append({"type": "audio", "mime_type": getattr(block, "mime_type", "")})
        elif kind == "resource":
            parts.append(_resource(block.resource))
        elif kind == "resource_link":
            parts.append(
                {
                    "type": "resource_link",
                    "uri": str(getattr(block, "uri", "")),
                    "name": getattr(block, "name", ""),
                }
            )
    out: dict[str, Any] = {}
    if texts:
        text = "\n".join(texts)
        out["text"] = text[:TEXT_LIMIT]
        if len(text) > TEXT_LIMIT:
            out["truncated"] = True
    if parts:
        out["content"] = parts
        shown = [p for p in parts if p.get("type") == "image" and "id" in p]
        if shown:
            out["images"] = shown
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        out["structured"] = structured
    return out, bool(getattr(result, "is_error", False))
