"""What an imported OpenAPI operation would send: the request ``build_request`` makes from the
arguments (the executor's own function), against the API's base URL. The API's credential is
never read here: the preview says which kind is added when the call runs."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.utils.translation import gettext as _

from tools_app.errors import ToolError
from tools_app.executors.http.preview import redirects_word, request_preview
from tools_app.executors.openapi.activity import build_request
from tools_app.executors.openapi.settings import OpenApiSettings
from tools_app.previews import Preview, PreviewContext, PreviewUnavailable
from tools_app.registry import preview


@preview("openapi_call")
def openapi_call_preview(args: Any, ctx: PreviewContext) -> Preview:
    settings: OpenApiSettings = ctx.settings
    if not settings.base_url:
        raise PreviewUnavailable(_("this API has no base URL; an admin must set one"))
    spec = type(args).spec
    try:
        url, headers, query, body = build_request(spec, args.arguments, settings.base_url)
    except ToolError as exc:
        raise PreviewUnavailable(exc.message) from None
    if query:
        url = f"{url}?{urlencode(query)}"
    return request_preview(
        method=str(spec["method"]),
        url=url,
        headers=headers,
        body=None,
        json_body=body,
        redirects=redirects_word(settings),
        extra=[
            (_("credential"), _("the API's, if it has one, added when the call runs (never shown)"))
        ],
    )
