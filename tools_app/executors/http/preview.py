"""What http_request would send: the method, the URL and its host, the headers as the client
prepares them (its own defaults included) with credentials masked, and the body."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from django.utils.translation import gettext as _

from tools_app.errors import ToolError
from tools_app.executors.http.client import _prepare_request
from tools_app.executors.http.settings import HttpSettings
from tools_app.previews import (
    Preview,
    PreviewContext,
    PreviewUnavailable,
    masked_url,
    masked_value,
    shortened,
)
from tools_app.registry import preview


def request_preview(
    *,
    method: str,
    url: str,
    headers: dict[str, str],
    body: str | None,
    json_body: Any,
    redirects: str,
    extra: list[tuple[str, str]] | None = None,
) -> Preview:
    """The preview of one request (http_request's and an OpenAPI operation's)."""
    try:
        content, prepared = _prepare_request(headers, body, json_body)
    except ToolError as exc:
        raise PreviewUnavailable(exc.message) from None
    try:
        host = urlsplit(url).hostname or ""
        port = urlsplit(url).port
    except ValueError as exc:
        raise PreviewUnavailable(str(exc)) from None
    shown_headers = "\n".join(f"{name}: {masked_value(name, value)}" for name, value in prepared)
    if json_body is not None:
        shown_body = json.dumps(json_body, indent=2, ensure_ascii=False)
    elif content is not None:
        shown_body = content.decode("utf-8", "replace")
    else:
        shown_body = ""
    fields = [
        (_("method"), method.upper()),
        (_("URL"), masked_url(url)),
        (_("host"), f"{host}:{port}" if port else host),
        (_("headers"), shown_headers),
        (_("body"), shortened(shown_body) if shown_body else _("none")),
        *(extra or []),
        (_("redirects"), redirects),
    ]
    return Preview(title=f"{method.upper()} {host}", fields=fields)


def redirects_word(settings: Any) -> str:
    if not settings.follow_redirects:
        return _("not followed")
    return _("followed, at most %(count)s, each checked again") % {
        "count": getattr(settings, "max_redirects", 5)
    }


@preview("http_request")
def http_request_preview(args: Any, ctx: PreviewContext) -> Preview:
    settings: HttpSettings = ctx.settings
    return request_preview(
        method=args.method,
        url=args.url,
        headers=dict(args.headers or {}),
        body=args.body,
        json_body=args.json_body,
        redirects=redirects_word(settings),
    )
