"""Talking to a provider's endpoint outside a conversation: its model list (``GET /models``)
and the admin's "Test connection" (the list, its latency, and whether one tiny request with a
tool comes back with a tool call). Plain HTTP with a short timeout, from the server; the API
key goes only into the request headers and never into a result or an error."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx2

from chat_app.models import Provider

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
ANTHROPIC_VERSION = "2023-06-01"
MODELS_TIMEOUT = 10.0  # seconds: listing models is quick or broken
TOOL_CALL_TIMEOUT = 30.0  # seconds: a model's first answer may take a while
PROBE_TOOL = "connection_test"
PROBE_PROMPT = f"This is a connection test. Call the {PROBE_TOOL} tool once, with no arguments."


class ProbeError(Exception):
    """The endpoint could not be reached or refused: ``str()`` is a sentence for the admin."""


@dataclass
class ProbeResult:
    models: list[str] = field(default_factory=list)
    models_ms: int | None = None
    models_error: str = ""
    # "yes": the reply carried a tool call; "no": the endpoint answered without one or refused
    # tools; "error": the request failed for another reason (see tools_detail).
    tools: str = ""
    tools_detail: str = ""
    tools_ms: int | None = None

    @property
    def ok(self) -> bool:
        return not self.models_error and self.tools != "error"


def _root(provider: Provider) -> str:
    base = (provider.base_url or DEFAULT_BASE_URLS.get(provider.kind, "")).rstrip("/")
    if provider.kind == Provider.Kind.ANTHROPIC:
        return base if base.endswith("/v1") else f"{base}/v1"  # the SDK's convention
    return base


def _headers(provider: Provider) -> dict[str, str]:
    key = provider.api_key
    if provider.kind == Provider.Kind.ANTHROPIC:
        headers = {"anthropic-version": ANTHROPIC_VERSION}
        if key:
            headers["x-api-key"] = key
        return headers
    return {"Authorization": f"Bearer {key}"} if key else {}


def _scrub(text: str, provider: Provider) -> str:
    key = provider.api_key
    return text.replace(key, "•••") if key and len(key) >= 4 else text


def _error_message(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("message"):
            return str(body["message"])
    return ""


def _request(
    provider: Provider, method: str, path: str, *, timeout: float, json: Any = None
) -> tuple[Any, int]:
    """The JSON answer and the milliseconds it took; ProbeError with a readable reason."""
    url = f"{_root(provider)}{path}"
    if not url.startswith(("http://", "https://")):
        raise ProbeError(f"the base URL must start with http:// or https:// (got {url!r})")
    started = time.perf_counter()
    try:
        with httpx2.Client(timeout=httpx2.Timeout(timeout, connect=min(timeout, 5.0))) as client:
            response = client.request(method, url, headers=_headers(provider), json=json)
    except httpx2.TimeoutException:
        raise ProbeError(f"no answer from {url} within {timeout:g} s") from None
    except httpx2.HTTPError as exc:
        reason = _scrub(str(exc) or type(exc).__name__, provider)
        raise ProbeError(f"cannot reach {url}: {reason}") from None
    elapsed = round((time.perf_counter() - started) * 1000)
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code in (401, 403):
        detail = _error_message(body)
        raise ProbeError(
            f"the endpoint refused the API key (HTTP {response.status_code})"
            + (f": {_scrub(detail, provider)}" if detail else "")
        )
    if response.status_code >= 400:
        detail = _error_message(body) or response.reason_phrase
        raise ProbeError(f"HTTP {response.status_code} from {url}: {_scrub(detail, provider)}")
    if body is None:
        raise ProbeError(f"{url} did not answer with JSON")
    return body, elapsed


def models_fetch(provider: Provider, *, timeout: float = MODELS_TIMEOUT) -> tuple[list[str], int]:
    """The endpoint's model names (sorted) and the milliseconds the listing took."""
    path = "/models?limit=1000" if provider.kind == Provider.Kind.ANTHROPIC else "/models"
    body, elapsed = _request(provider, "GET", path, timeout=timeout)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list):  # Ollama's native /api/tags shape is not this endpoint
        raise ProbeError("the answer to GET /models has no model list ('data')")
    names = {str(m["id"]) for m in data if isinstance(m, dict) and m.get("id")}
    return sorted(names), elapsed


def _tool_request(provider: Provider) -> tuple[str, Any]:
    # Sent as a turn would send it: the provider's temperature too (a server that refuses it
    # fails here, not in the chat); the cap is the probe's own, as a caller's cap wins.
    sampling = {} if provider.temperature is None else {"temperature": provider.temperature}
    if provider.kind == Provider.Kind.ANTHROPIC:
        tool = {
            "name": PROBE_TOOL,
            "description": "Answers a connection test.",
            "input_schema": {"type": "object", "properties": {}},
        }
        return "/messages", {
            "model": provider.model,
            "max_tokens": 64,
            **sampling,
            "messages": [{"role": "user", "content": PROBE_PROMPT}],
            "tools": [tool],
        }
    function = {
        "name": PROBE_TOOL,
        "description": "Answers a connection test.",
        "parameters": {"type": "object", "properties": {}},
    }
    return "/chat/completions", {
        "model": provider.model,
        "max_tokens": 64,
        **sampling,
        "messages": [{"role": "user", "content": PROBE_PROMPT}],
        "tools": [{"type": "function", "function": function}],
    }


def _has_tool_call(provider: Provider, body: Any) -> bool:
    if not isinstance(body, dict):
        return False
    if provider.kind == Provider.Kind.ANTHROPIC:
        blocks = body.get("content") or []
        return any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
    choices = body.get("choices") or [{}]
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    return bool(isinstance(message, dict) and message.get("tool_calls"))


def tool_call_check(provider: Provider, *, timeout: float = TOOL_CALL_TIMEOUT) -> ProbeResult:
    result = ProbeResult()
    path, payload = _tool_request(provider)
    try:
        body, result.tools_ms = _request(provider, "POST", path, timeout=timeout, json=payload)
    except ProbeError as exc:
        text = str(exc)
        if "tool" in text.lower() and "support" in text.lower():
            result.tools, result.tools_detail = "no", f"the endpoint refused tools: {text}"
        else:
            result.tools, result.tools_detail = "error", text
        return result
    if _has_tool_call(provider, body):
        result.tools, result.tools_detail = "yes", "the reply carried a native tool call"
    else:
        result.tools = "no"
        result.tools_detail = "the model answered in text, without a tool call"
    return result


def provider_test(provider: Provider) -> ProbeResult:
    """The admin's Test connection: list models, then one tiny request with a tool."""
    timeout = float(min(provider.timeout_seconds or MODELS_TIMEOUT, MODELS_TIMEOUT))
    result = ProbeResult()
    try:
        result.models, result.models_ms = models_fetch(provider, timeout=timeout)
    except ProbeError as exc:
        result.models_error = str(exc)
    if not provider.model:
        result.tools, result.tools_detail = "error", "no model set: cannot send a test request"
        return result
    check = tool_call_check(
        provider, timeout=float(min(provider.timeout_seconds or TOOL_CALL_TIMEOUT, 30))
    )
    result.tools, result.tools_detail, result.tools_ms = (
        check.tools,
        check.tools_detail,
        check.tools_ms,
    )
    return result
