"""Search backends for ``web_search``: a SearXNG instance's JSON API and Tavily-compatible APIs.

The backend is the one host an admin named (``search_url``), so each request is checked with
that host as the only allowed host; a backend on a private address needs an explicit entry in
``search_private_allowed``. Redirects are not followed: a search API has no reason to redirect,
and a redirected POST would carry the API key to wherever it points.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from tools_app.errors import ToolError
from tools_app.executors.http.client import HttpResult, fetch
from tools_app.executors.research.settings import ResearchSettings

MAX_RESPONSE_BYTES = 2_000_000
SNIPPET_CHARS = 600
_ERROR_BODY_CHARS = 300


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str

    def as_dict(self) -> dict[str, str]:
        return {"title": self.title, "url": self.url, "snippet": self.snippet}


def search(
    settings: ResearchSettings, query: str, limit: int, cancel: threading.Event | None = None
) -> tuple[str, list[SearchResult]]:
    """(backend name for the trace, up to ``limit`` results); raises ToolError/PolicyDenied."""
    backend = settings.search_backend
    if backend == "none" or not settings.search_url:
        raise ToolError(
            "web search is not configured: an admin must choose a search backend (SearXNG or "
            "Tavily-compatible) and its URL in the Tools Manager, group Research"
        )
    if backend == "searxng":
        return "SearXNG", _searxng(settings, query, limit, cancel)
    return "Tavily", _tavily(settings, query, limit, cancel)


def _endpoint(base: str) -> str:
    """``base`` with ``/search`` as its path, unless the admin already wrote it."""
    parts = urlsplit(base)
    path = parts.path.rstrip("/")
    if not path.endswith("/search"):
        path += "/search"
    return parts._replace(path=path, query="", fragment="").geturl()


def _call(
    settings: ResearchSettings,
    method: str,
    url: str,
    *,
    json_body: object | None = None,
    headers: dict[str, str] | None = None,
    cancel: threading.Event | None,
) -> Any:
    host = urlsplit(url).hostname or ""
    result = fetch(
        method,
        url,
        headers={"Accept": "application/json", **(headers or {})},
        json_body=json_body,
        timeout=float(settings.search_timeout_seconds),
        max_bytes=MAX_RESPONSE_BYTES,
        follow_redirects=False,
        allowed_hosts=[host],
        private_allowed=settings.search_private_allowed,
        cancel=cancel,
    )
    if result.status != 200:
        raise ToolError(
            f"the search backend answered {result.status}: {_excerpt(result)}",
            permanent=result.status < 500 and result.status != 429,
        )
    if result.truncated or result.text is None:
        raise ToolError("the search backend's answer is too large or not text")
    try:
        return json.loads(result.text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"the search backend did not answer JSON ({exc.msg})") from None


def _excerpt(result: HttpResult) -> str:
    text = (result.text or result.binary_note or "").strip().replace("\n", " ")
    return text[:_ERROR_BODY_CHARS] or "(empty body)"


def _searxng(
    settings: ResearchSettings, query: str, limit: int, cancel: threading.Event | None
) -> list[SearchResult]:
    url = f"{_endpoint(settings.search_url)}?{urlencode({'q': query, 'format': 'json'})}"
    data = _call(settings, "GET", url, cancel=cancel)
    return _results(data, limit, snippet_key="content")


def _tavily(
    settings: ResearchSettings, query: str, limit: int, cancel: threading.Event | None
) -> list[SearchResult]:
    key = settings.search_api_key.get_secret_value()
    if not key:
        raise ToolError(
            "the Tavily-compatible search backend has no API key: an admin must store one in "
            "the Tools Manager, group Research"
        )
    # Tavily's documented API takes the key as a bearer token; older versions and several
    # compatible servers read ``api_key`` from the body. Both go to the admin's host only.
    data = _call(
        settings,
        "POST",
        _endpoint(settings.search_url),
        json_body={"api_key": key, "query": query, "max_results": limit},
        headers={"Authorization": f"Bearer {key}"},
        cancel=cancel,
    )
    return _results(data, limit, snippet_key="content")


def _results(data: Any, limit: int, *, snippet_key: str) -> list[SearchResult]:
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ToolError("the search backend's answer has no 'results' list")
    out: list[SearchResult] = []
    seen: set[str] = set()
    for item in data["results"]:
        if not isinstance(item, dict):
            continue
        url = str(item.get("url") or "").strip()
        if not url.startswith(("http://", "https://")) or url in seen:
            continue
        seen.add(url)
        title = " ".join(str(item.get("title") or "").split())[:300]
        snippet = " ".join(str(item.get(snippet_key) or "").split())
        if len(snippet) > SNIPPET_CHARS:
            snippet = snippet[: SNIPPET_CHARS - 1] + "…"
        out.append(SearchResult(title=title or url, url=url, snippet=snippet))
        if len(out) >= limit:
            break
    return out
