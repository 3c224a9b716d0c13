"""The http_request activity: runs in the worker (no sandbox needed: it executes no code),
behind the SSRF guard, which is checked again at connect time and on every redirect."""

from __future__ import annotations

from typing import Any

from tools_app.executors.http.client import fetch
from tools_app.executors.http.settings import HttpSettings
from tools_app.executors.http.tools import HttpRequest
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("http_request")
def http_request(args: HttpRequest, ctx: ActivityContext[HttpSettings]) -> dict[str, Any]:
    settings = ctx.settings
    timeout = min(args.timeout or settings.timeout_seconds, settings.timeout_seconds)
    ctx.emit_output(f"{args.method} {args.url}\n")
    result = fetch(
        args.method,
        args.url,
        headers=args.headers,
        body=args.body,
        json_body=args.json_body,
        timeout=float(timeout),
        max_bytes=settings.max_response_bytes,
        follow_redirects=settings.follow_redirects,
        max_redirects=settings.max_redirects,
        allowed_hosts=settings.allowed_hosts,
        private_allowed=settings.private_allowed,
        cancel=ctx.cancel,
    )
    for hop in result.redirects:
        ctx.emit_output(f"→ redirected to {hop}\n")
    size = len(result.text or "")
    ctx.emit_output(
        f"{result.status} ({size} characters{', truncated' if result.truncated else ''})\n"
    )
    out: dict[str, Any] = {
        "status": result.status,
        "url": result.url,
        "headers": result.headers,
        "text": result.text,
        "truncated": result.truncated,
        "elapsed_ms": result.elapsed_ms,
    }
    if result.redirects:
        out["redirects"] = result.redirects
    if result.binary_note:
        out["note"] = result.binary_note
    return out
