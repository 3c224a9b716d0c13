"""http_request through the real path (binding + execution) against the recording servers of
``conftest.py``: the SSRF guard at binding and on redirects, the admin's host lists, bodies,
truncation and the ``/http`` shorthand."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import pytest

from chat_app.models import Conversation, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.tools.conftest import Tools, configure, make_tools
from tools_app.models import ToolCall

from .conftest import RecordingServer


@pytest.fixture
def tools(owner: Any) -> Tools:
    return make_tools(owner, "http")


def _hits(server: RecordingServer) -> int:
    return len(server.hits)


def test_it_denies_loopback_by_default(tools: Tools, victim: RecordingServer) -> None:
    before = _hits(victim)
    call = tools.call("http_request", url=victim.url("/hello"))
    assert call.status == ToolCall.Status.DENIED
    assert call.error.startswith("policy: URL refused: "), call.error
    assert call.result == {"success": False, "error": call.error}
    assert _hits(victim) == before


def test_it_reaches_a_private_host_the_admin_allowed(tools: Tools, local: RecordingServer) -> None:
    configure("http", private_allowed=["127.0.0.3"])
    call = tools.call("http_request", url=local.url("/hello"))
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["status"] == 200
    assert call.result["text"] == "hello"
    assert call.result["truncated"] is False
    assert call.output.startswith(f"GET {local.url('/hello')}\n200 (5 characters)")


def test_it_refuses_hosts_outside_the_allowed_globs(tools: Tools, local: RecordingServer) -> None:
    configure("http", allowed_hosts=["*.example.com"], private_allowed=["127.0.0.3"])
    before = _hits(local)
    call = tools.call("http_request", url=local.url("/hello"))
    assert call.status == ToolCall.Status.DENIED
    assert "*.example.com" in call.error, call.error
    assert _hits(local) == before
    # The glob matches subdomains only, not look-alikes.
    for url in ("http://example.com.evil.net/", "http://notexample.com/"):
        call = tools.call("http_request", url=url)
        assert call.status == ToolCall.Status.DENIED, (url, call.result)


def test_it_posts_json(tools: Tools, local: RecordingServer) -> None:
    configure("http", private_allowed=["127.0.0.3"])
    call = tools.call("http_request", method="POST", url=local.url("/echo"), json={"a": [1, 2]})
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    echoed = json.loads(call.result["text"])
    assert echoed["method"] == "POST"
    assert json.loads(echoed["body"]) == {"a": [1, 2]}
    assert echoed["headers"]["content-type"] == "application/json"
    assert call.arguments["json"] == {"a": [1, 2]}


def test_it_truncates_a_large_response_with_a_notice(tools: Tools, local: RecordingServer) -> None:
    configure("http", private_allowed=["127.0.0.3"], max_response_bytes=1000)
    call = tools.call("http_request", url=local.url("/big?n=5000"))
    assert call.status == ToolCall.Status.SUCCEEDED, call.result
    assert call.result["truncated"] is True
    body, _, notice = call.result["text"].partition("\n\n")
    assert len(body) == 1000
    assert notice == "[truncated: only the first 1000 bytes of the body are shown]"
    assert "truncated" in call.output


def test_it_refuses_a_redirect_to_loopback_from_an_allowed_server(
    tools: Tools, allowed: RecordingServer, victim: RecordingServer
) -> None:
    configure("http", private_allowed=["127.0.0.2"])
    before_victim, before_allowed = _hits(victim), _hits(allowed)
    url = allowed.url(f"/redirect?to={quote(victim.url('/hello'), safe='')}")
    call = tools.call("http_request", url=url)
    assert call.status == ToolCall.Status.DENIED, call.result
    refused = f"policy: redirect to {victim.url('/hello')} refused: "
    assert call.error.startswith(refused), call.error
    assert "loopback" in call.error
    assert _hits(allowed) == before_allowed + 1
    assert _hits(victim) == before_victim


@pytest.mark.modes
def test_the_http_slash_shorthand(worker: str, tools: Tools, owner: Any, local: RecordingServer):
    configure("http", private_allowed=["127.0.0.3"])
    conversation = Conversation.objects.get(pk=tools.conversation_id)
    text = f"/http GET {local.url('/hello')}"
    turn = turn_start(conversation=conversation, user_id=owner.pk, text=text)
    assert turn is not None
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    call = ToolCall.objects.get(turn=turn)
    assert call.tool == "http_request" and call.source == ToolCall.Source.SLASH
    assert call.arguments == {"method": "GET", "url": local.url("/hello")}
    assert call.result["status"] == 200 and call.result["text"] == "hello"
