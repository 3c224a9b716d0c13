"""An MCP tool result as our result dict: text, images (stored, shown inline on the card),
embedded resources, resource links and structured content.

What the model reads is capped (the group's ``max_result_chars``, 15,000 by default, after
seed 004's ``mcp_context_limit``): text first, then resources' text, then structured content
share one budget, and what does not fit is cut with a ``[truncated, N more characters]``
marker so the model knows there was more."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from pathlib import Path
from typing import Any

from tools_app.runtime import ActivityContext

MAX_IMAGES = 8
MAX_IMAGE_BYTES = 5_000_000
DEFAULT_LIMIT = 15_000
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


class _Budget:
    """Characters left for the model; ``take`` cuts a text to what is left, with a marker."""

    def __init__(self, limit: int) -> None:
        self.left = limit
        self.cut = False

    def take(self, text: str) -> str:
        if len(text) <= self.left:
            self.left -= len(text)
            return text
        kept = text[: max(self.left, 0)]
        self.left = 0
        self.cut = True
        return f"{kept}\n[truncated, {len(text) - len(kept):,} more characters]"


def _resource(contents: Any, budget: _Budget) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "resource", "uri": str(getattr(contents, "uri", ""))}
    mime = getattr(contents, "mime_type", None)
    if mime:
        out["mime_type"] = mime
    text = getattr(contents, "text", None)
    if text is not None:
        out["text"] = budget.take(str(text))
    else:
        blob = str(getattr(contents, "blob", "") or "")
        out["bytes"] = len(blob) * 3 // 4
    return out


def convert_result(
    result: Any, ctx: ActivityContext, *, limit: int = DEFAULT_LIMIT
) -> tuple[dict[str, Any], bool]:
    """(our result fields, is_error). ``limit``: characters the model may get."""
    budget = _Budget(limit)
    texts: list[str] = []
    parts: list[dict[str, Any]] = []
    resources: list[tuple[int, Any]] = []
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
            resources.append((len(parts), block.resource))
            parts.append({})
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
        out["text"] = budget.take("\n".join(texts))
    for index, contents in resources:  # after the text, which comes first for the model
        parts[index] = _resource(contents, budget)
    if parts:
        out["content"] = parts
        shown = [p for p in parts if p.get("type") == "image" and "id" in p]
        if shown:
            out["images"] = shown
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        encoded = json.dumps(structured, ensure_ascii=False, default=str)
        if len(encoded) <= budget.left:
            budget.left -= len(encoded)
            out["structured"] = structured
        else:  # as text, cut: a cut JSON value is no longer JSON
            out["structured_text"] = budget.take(encoded)
    if budget.cut:
        out["truncated"] = True
        out["notice"] = (
            f"the result was longer than {limit:,} characters (this MCP server's limit) and was cut"
        )
    return out, bool(getattr(result, "is_error", False))
