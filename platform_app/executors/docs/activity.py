"""Docs activities: thin wrappers over ``platform_app.docs``."""

from __future__ import annotations

from typing import Any

from platform_app import docs, safe_files
from platform_app.executors.docs.settings import DocsSettings, docs_roots
from platform_app.executors.docs.tools import DocsList, DocsRead, DocsSearch
from platform_app.memory.embedders import LocalEmbedder
from tools_app.errors import PolicyDenied, ToolError
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def _run(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except safe_files.Refused as exc:
        raise PolicyDenied(str(exc)) from None
    except (safe_files.Missing, docs.DocsError) as exc:
        raise ToolError(str(exc)) from None


@activity("docs_list")
def docs_list(args: DocsList, ctx: ActivityContext[DocsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    files = _run(
        docs.docs_list,
        docs_roots(settings),
        max_files=settings.max_files,
        max_bytes=settings.max_read_bytes,
    )
    ctx.emit_output(f"{len(files)} file(s)\n")
    return {"count": len(files), "files": files}


@activity("docs_search")
def docs_search(args: DocsSearch, ctx: ActivityContext[DocsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    found: docs.SearchResult = _run(
        docs.docs_search,
        docs_roots(settings),
        args.query,
        top_k=args.top_k,
        max_files=settings.max_files,
        max_bytes=settings.max_read_bytes,
        embedder=LocalEmbedder() if settings.embedder == "local" else None,
        min_similarity=settings.min_similarity,
    )
    ctx.emit_output(f"{len(found.results)} section(s), {found.mode}\n")
    out: dict[str, Any] = {
        "query": args.query,
        "mode": found.mode,
        "count": len(found.results),
        "results": found.results,
    }
    if found.embedder:
        out["embedder"] = found.embedder
    if found.notice:
        out["notice"] = found.notice
    return out


@activity("docs_read")
def docs_read(args: DocsRead, ctx: ActivityContext[DocsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    out: dict[str, Any] = _run(
        docs.docs_read, docs_roots(settings), args.path, max_bytes=settings.max_read_bytes
    )
    ctx.emit_output(f"read {out['path']}{'#' + out['heading'] if 'heading' in out else ''}\n")
    return out
