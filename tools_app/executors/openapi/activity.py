"""The openapi_call activity: one HTTP request to the group's API, credentials added here."""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote, urlencode

from tools_app.errors import ToolError
from tools_app.executors.http.client import fetch
from tools_app.executors.openapi.settings import OpenApiSettings
from tools_app.executors.openapi.tools import OpenApiTool
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def _credentials(source_name: str) -> tuple[dict[str, Any], dict[str, str]]:
    from tools_app.services.sources import source_auth

    return source_auth(source_name)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def build_request(
    spec: dict[str, Any], arguments: dict[str, Any], base_url: str
) -> tuple[str, dict[str, str], list[tuple[str, str]], Any]:
    """(url, headers, query pairs, JSON body or None) for one call."""
    path = str(spec["path"])
    headers: dict[str, str] = {}
    query: list[tuple[str, str]] = []
    body: Any = None
    for param in spec.get("params") or []:
        key, where, name = param["key"], param["in"], param["name"]
        if key not in arguments or arguments[key] is None:
            continue
        value = arguments[key]
        if where == "path":
            path = path.replace("{" + name + "}", quote(_scalar(value), safe=""))
        elif where == "query":
            if isinstance(value, list):
                query.extend((name, _scalar(v)) for v in value)
            else:
                query.append((name, _scalar(value)))
        elif where == "header":
            text = _scalar(value)
            if "\r" in text or "\n" in text:
                raise ToolError(f"header parameter {name!r} must be one line")
            headers[name] = text
        elif where == "body":
            body = value
    if "{" in path:
        raise ToolError(f"missing path parameter in {path}")
    return base_url.rstrip("/") + path, headers, query, body


def _add_auth(
    auth: dict[str, Any], secret: dict[str, str], headers: dict[str, str], query: list[Any]
) -> None:
    kind = auth.get("type") or "none"
    value = secret.get("value", "")
    if kind == "none":
        return
    if not value:
        raise ToolError(f"the API's {kind} credential is not set; an admin must enter it")
    if kind == "bearer":
        headers["Authorization"] = f"Bearer {value}"
    elif kind == "basic":
        pair = f"{auth.get('username', '')}:{value}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
    elif kind == "api_key":
        name = str(auth.get("name") or "X-API-Key")
        if auth.get("in") == "query":
            query.append((name, value))
        else:
            headers[name] = value


@activity("openapi_call")
def openapi_call(args: OpenApiTool, ctx: ActivityContext[OpenApiSettings]) -> dict[str, Any]:
    settings = ctx.settings
    if not settings.base_url:
        raise ToolError("this API has no base URL; an admin must set one in its settings")
    spec = type(args).spec
    url, headers, query, body = build_request(spec, args.arguments, settings.base_url)
    auth, secret, credential = _auth_for(type(args), ctx)
    shown_url = url + (f"?{urlencode(query)}" if query else "")
    _add_auth(auth, secret, headers, query)  # after shown_url: a query key is never shown
    if query:
        url = f"{url}?{urlencode(query)}"
    method = str(spec["method"]).upper()
    ctx.emit_output(f"{method} {shown_url}\n")
    result = fetch(
        method,
        url,
        headers=headers,
        json_body=body,
        timeout=ctx.timeout,
        max_bytes=settings.max_response_bytes,
        follow_redirects=settings.follow_redirects,
        allowed_hosts=settings.allowed_hosts,
        private_allowed=settings.private_allowed,
        cancel=ctx.cancel,
    )
    ctx.emit_output(f"{result.status}\n")
    out: dict[str, Any] = {"status": result.status}
    content_type = result.headers.get("content-type", "")
    if content_type:
        out["content_type"] = content_type
    parsed: Any = None
    if result.text is not None and "json" in content_type and not result.truncated:
        try:
            parsed = json.loads(result.text)
        except json.JSONDecodeError:
            parsed = None
    if parsed is not None:
        out["json"] = parsed
    elif result.text is not None:
        out["text"] = result.text
    if result.binary_note:
        out["note"] = result.binary_note
    if result.truncated:
        out["truncated"] = True
    if credential is not None:
        from tools_app.connections.services import scrub

        out = scrub(out, credential.secret_values)
        out["connection"] = credential.label
        if result.status == 401 and credential.kind == "oauth":
            from tools_app.connections.services import connection_refresh

            # Renewed now for the next call (ConnectionNeeded when it cannot be).
            connection_refresh(credential.connection_id, rejected=credential.access_token)
            raise ToolError(
                "the API refused the token (401); it has been renewed: retry the call",
                permanent=False,
                data=out,
            )
    if result.status >= 400:
        raise ToolError(f"the API answered {result.status}", data=out)
    return out


def _auth_for(
    tool: type[OpenApiTool], ctx: ActivityContext[OpenApiSettings]
) -> tuple[dict[str, Any], dict[str, str], Any]:
    """(auth config, secret, the person's credential or None). A per-person API takes the
    call's person's own key or token, never the shared one; "none" sends nothing."""
    from tools_app.connections.services import NONE, credential_for_call, source_credentials
    from tools_app.models import ToolSource

    auth, secret = _credentials(tool.source_name)
    source = tool.source_row or ToolSource.objects.filter(name=tool.source_name).first()
    if source is None:
        return auth, secret, None
    if source_credentials(source) == NONE:
        return {"type": "none"}, {}, None
    credential = credential_for_call(source, user_id=ctx.user_id, tool=tool.tool_name)
    if credential is None:
        return auth, secret, None
    if auth.get("type") == "oauth2":
        auth = {**auth, "type": "bearer"}
    return auth, {"value": credential.access_token or credential.api_key}, credential
