"""Filter webhooks: an endpoint the admin names on a tool group is asked about every call of
the group, once with its arguments (at binding) and once with its result (before the model
reads it), and answers what to do.

The request is a ``POST`` of JSON, signed like our webhooks (``infra.signing``:
``X-CC-Signature: t=<timestamp>,v1=<hex>`` over "<timestamp>." + body, with the group's
``filter_secret``)::

    {"stage": "arguments" | "result", "tool": "http_request", "group": "http",
     "source": "chat", "conversation_id": 3, "turn_id": 9, "user_id": 1,
     "arguments": {...}, "result": {...}}          # "result" at the result stage only

The answer is one of ``{"action": "accept"}``, ``{"action": "reject", "reason": "…"}``,
``{"action": "mutate", "arguments": {...}}`` (arguments stage) or ``{"action": "mutate",
"result": ...}`` (result stage). It goes through the HTTP tool's SSRF-guarded client: no
private, loopback or metadata address unless the admin listed the host in
``filter_private_hosts``; redirects are not followed. A failure (no answer in time, an HTTP
error, an answer that is not one of those) is a ``FilterFailed``: the caller refuses the call
(fail closed) or lets it through (fail open) as the group says.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from infra.safe_json import json_loads_safe
from infra.signing import signature
from tools_app.errors import PolicyDenied, ToolError
from tools_app.executors.http.client import fetch
from tools_app.group_settings import GroupSettings

USER_AGENT = "ControlCenter-Filter/1"
MAX_ANSWER_BYTES = 1_000_000


class FilterFailed(Exception):
    """The filter could not be asked or answered nonsense (the words say which)."""


@dataclass(frozen=True)
class FilterAnswer:
    action: str  # "accept" | "reject" | "mutate"
    reason: str = ""
    value: Any = None  # the mutated arguments or result
    mutated: bool = False


def filter_ask(settings: GroupSettings, payload: dict[str, Any]) -> FilterAnswer:
    """Ask the group's filter webhook about ``payload``; raise FilterFailed when it cannot
    say."""
    url = settings.filter_url
    host = urlsplit(url).hostname or ""
    private = [h.strip().lower() for h in settings.filter_private_hosts if h.strip()]
    if urlsplit(url).scheme != "https" and host.lower() not in private:
        raise FilterFailed(f"the filter webhook must use https:// ({host} is not a private host)")
    body = json.dumps(payload, ensure_ascii=False, default=str).encode()
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-CC-Timestamp": str(stamp),
    }
    secret = settings.filter_secret.get_secret_value()
    if secret:
        headers["X-CC-Signature"] = signature(secret, stamp, body)
    try:
        answer = fetch(
            "POST",
            url,
            headers=headers,
            body=body.decode(),
            timeout=float(settings.filter_timeout_seconds),
            max_bytes=MAX_ANSWER_BYTES,
            follow_redirects=False,
            private_allowed=private,
        )
    except PolicyDenied as exc:
        raise FilterFailed(f"refused by the SSRF guard: {exc.reason}") from None
    except ToolError as exc:  # timeout, refused connection, name not resolving
        raise FilterFailed(f"not reached: {exc.message}") from None
    if not 200 <= answer.status < 300:
        raise FilterFailed(f"answered HTTP {answer.status}")
    return _parse(answer.text or "", stage=str(payload.get("stage", "")))


def _parse(text: str, *, stage: str) -> FilterAnswer:
    try:
        data = json_loads_safe(text)
    except ValueError:
        raise FilterFailed("answered something that is not JSON") from None
    if not isinstance(data, dict):
        raise FilterFailed("answered JSON that is not an object")
    action = data.get("action")
    if action == "accept":
        return FilterAnswer("accept")
    if action == "reject":
        reason = data.get("reason")
        reason = reason.strip()[:500] if isinstance(reason, str) and reason.strip() else ""
        return FilterAnswer("reject", reason=reason or "no reason given")
    if action == "mutate":
        key = "arguments" if stage == "arguments" else "result"
        if key not in data:
            raise FilterFailed(f'answered "mutate" without "{key}"')
        value = data[key]
        if key == "arguments" and not isinstance(value, dict):
            raise FilterFailed('answered "mutate" with arguments that are not an object')
        return FilterAnswer("mutate", value=value, mutated=True)
    raise FilterFailed(f"answered an unknown action {str(action)[:40]!r}")
