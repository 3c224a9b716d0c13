"""JSON nested beyond a sane depth (issue 33, finding 7): 300 KB of ``[`` to ``/v1``, the REST
API and ``/mcp/`` is answered 400 in each surface's error shape, never 500, and the server
goes on serving."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.api.conftest import token_for

DEEP = b"[" * (300 * 1024)
# Parses under Python's recursion limit, but no request is shaped like it.
NESTED = b'{"model": "General", "messages": [{"role": "user", "content": "hi"}], "x": ' + (
    b"[" * 200 + b"]" * 200 + b"}"
)
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def http(api_server: str, user: Any) -> httpx2.Client:
    token = token_for(user)
    return httpx2.Client(
        base_url=api_server, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _error(response: httpx2.Response) -> dict[str, Any]:
    assert response.status_code == 400, response.text[:500]
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and "nested deeper than" in error["message"]
    return error


def test_it_answers_400_to_deeply_nested_json_on_v1(http: httpx2.Client, provider: Any) -> None:
    for body in (DEEP, NESTED):
        error = _error(http.post("/v1/chat/completions", content=body, headers=JSON))
        assert error["code"] == "json_too_deep"
    assert http.get("/v1/models").status_code == 200


def test_it_answers_400_to_deeply_nested_json_on_the_rest_api(http: httpx2.Client) -> None:
    for body in (DEEP, NESTED):
        error = _error(http.post("/api/conversations", content=body, headers=JSON))
        assert error["code"] == "json_too_deep"
    assert http.get("/api/me").status_code == 200


def test_it_answers_400_to_deeply_nested_json_on_mcp(api_server: str, user: Any) -> None:
    token = token_for(user, name="mcp")
    headers = {
        **JSON,
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {token}",
    }
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", '
    nested = call + b'"arguments": {"a": ' + b"[" * 150 + b"]" * 150 + b"}}}"
    with httpx2.Client(base_url=api_server, headers=headers, timeout=30) as client:
        for body in (DEEP, nested):
            response = client.post("/mcp/", content=body)
            assert response.status_code == 400, response.text[:500]
            error = response.json()["error"]
            assert error["code"] == -32700 and "nested deeper than" in error["message"]
