"""The research activities: run in the worker (they execute no code, so no sandbox), every
request through the HTTP tool's SSRF-guarded client."""

from __future__ import annotations

import time
from typing import Any

from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.http.settings import HttpSettings
from tools_app.executors.research.extract import read_page
from tools_app.executors.research.search import search
from tools_app.executors.research.settings import ResearchSettings
from tools_app.executors.research.sources import Found, sources_register
from tools_app.executors.research.tools import ExtractPageContent, WebSearch
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("web_search")
def web_search(args: WebSearch, ctx: ActivityContext[ResearchSettings]) -> dict[str, Any]:
    settings = ctx.settings
    limit = min(args.max_results, settings.max_results)
    ctx.emit_output(f"searching for {args.query!r}\n")
    backend, results = search(settings, args.query, limit, cancel=ctx.cancel)
    ctx.emit_output(f"{backend}: {len(results)} result{'s' if len(results) != 1 else ''}\n")
    numbers = sources_register(
        turn_id=ctx.turn_id,
        found=[Found(r.url, r.title, r.snippet) for r in results],
        call_id=ctx.call_id,
    )
    for number, result in zip(numbers, results, strict=True):
        ctx.emit_output(f"[{number}] {result.title} — {result.url}\n")
    return {
        "query": args.query,
        "results": [
            {"source": number, **r.as_dict()} for number, r in zip(numbers, results, strict=True)
        ],
        "cite": "cite these sources by their number, e.g. [1]; the numbers hold for the turn",
    }


@activity("extract_page_content")
def extract_page_content(
    args: ExtractPageContent, ctx: ActivityContext[ResearchSettings]
) -> dict[str, Any]:
    settings = ctx.settings
    if len(args.urls) > settings.max_urls:  # binding checked it; the setting may have changed
        raise PolicyDenied(f"at most {settings.max_urls} pages may be read per call")
    # Pages follow the HTTP tool's policy: one admin decision says what the agent may reach.
    http = selectors.group_settings("http", HttpSettings)
    # Stop a little before the watchdog would, so the pages read so far are returned and the
    # rest are reported as timed out, rather than the whole call ending in a timeout.
    deadline = time.monotonic() + max(ctx.timeout - 2.0, ctx.timeout * 0.9)
    pages: list[dict[str, Any]] = []
    done: list[tuple[str, dict[str, Any]]] = []  # (the URL asked for, its page)
    for url in dict.fromkeys(args.urls):  # each distinct URL once, in the given order
        ctx.check_cancelled()
        left = deadline - time.monotonic()
        ctx.emit_output(f"GET {url}\n")
        try:
            if left <= 0:
                raise ToolTimeout(ctx.timeout)
            page = read_page(
                url,
                http=http,
                timeout=min(float(settings.page_timeout_seconds), left),
                max_chars=settings.max_chars_per_page,
                cancel=ctx.cancel,
            )
        except ToolCancelled:  # Stop, or the call's own timeout: the whole call ends
            raise
        except PolicyDenied as exc:
            pages.append({"url": url, "success": False, "error": f"policy: {exc}"})
            ctx.emit_output(f"  refused: {exc}\n")
        except ToolTimeout as exc:
            pages.append({"url": url, "success": False, "error": str(exc)})
            ctx.emit_output(f"  {exc}\n")
        except ToolError as exc:
            pages.append({"url": url, "success": False, "error": str(exc)})
            ctx.emit_output(f"  failed: {exc}\n")
        else:
            pages.append({"success": True, **page.as_dict()})
            done.append((url, pages[-1]))
            cut = ", truncated" if page.truncated else ""
            ctx.emit_output(f"  {page.status}: {len(page.text)} characters of text{cut}\n")
    read = sum(1 for p in pages if p["success"])
    # Numbered by the URL asked for (the one web_search gave), not where a redirect led.
    numbers = sources_register(
        turn_id=ctx.turn_id,
        found=[Found(asked, str(page.get("title") or "")) for asked, page in done],
        call_id=ctx.call_id,
        read=True,
    )
    for number, (asked, page_out) in zip(numbers, done, strict=True):
        page_out["source"] = number
        ctx.emit_output(f"[{number}] {asked}\n")
    if not read:
        raise ToolError(f"none of the {len(pages)} pages could be read", data={"pages": pages})
    return {"pages": pages, "read": read, "failed": len(pages) - read}
