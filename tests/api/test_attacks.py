"""Attacks on the new ways in, against the real server: oversized and malformed bodies, forged
cursors, a token guessed or sent another way, approving one's own call with edited arguments,
and another person's turn stream. Each gets a clear error in the one shape, loses nothing and
leaves the server serving."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from django.conf import settings

from chat_app.models import Conversation, Turn
from tests.api.conftest import token_for
from tools_app.models import AuditRecord, ToolCall


def _error(response: httpx2.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["message"] and error["type"]
    return error


@pytest.fixture
def http(api_server: str, user: Any) -> httpx2.Client:
    token = token_for(user)
    return httpx2.Client(
        base_url=api_server, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def test_bodies_that_are_too_large_or_not_json_are_refused_clearly(
    http: httpx2.Client, provider: Any
) -> None:
    big = (
        b'{"model": "General", "messages": [{"role": "user", "content": "'
        + b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 10)
        + b'"}]}'
    )
    headers = {"Content-Type": "application/json"}
    assert _error(http.post("/v1/chat/completions", content=big, headers=headers), 413)
    assert _error(http.post("/api/conversations", content=big, headers=headers), 413)
    for body in (b"{not json", b"\xff\xfe", b""):
        error = _error(http.post("/v1/chat/completions", content=body, headers=headers), 400)
        assert error["code"] == "invalid_json"
        status = 422 if body == b"" else 400  # nothing at all: the body is missing
        _error(http.post("/api/conversations", content=body, headers=headers), status)
    for value in ([], "text", 42, None):
        _error(http.post("/v1/chat/completions", json=value), 400)
        _error(http.post("/api/conversations", json=value), 422)
    empty = {"model": "General", "messages": []}
    error = _error(http.post("/v1/chat/completions", json=empty), 400)
    assert error["param"] == "messages"
    bad_role = {"model": "General", "messages": [{"role": "root", "content": "hi"}]}
    assert _error(http.post("/v1/chat/completions", json=bad_role), 400)["param"] == "messages"
    image = {"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}
    parts = {"model": "General", "messages": [{"role": "user", "content": [image]}]}
    assert _error(http.post("/v1/chat/completions", json=parts), 400)["code"] == (
        "unsupported_content"
    )
    assert not Conversation.objects.exists()
    assert http.get("/v1/models").status_code == 200  # still serving


def test_a_message_larger_than_the_chat_takes_is_refused(
    http: httpx2.Client, provider: Any
) -> None:
    conversation = http.post("/api/conversations", json={}).json()
    text = "y" * (settings.CHAT_MAX_MESSAGE_BYTES + 1)
    error = _error(http.post(f"/api/conversations/{conversation['id']}/messages",
                             json={"text": text}), 400)  # fmt: skip
    assert "the message is too large" in error["message"]
    nul = http.post(f"/api/conversations/{conversation['id']}/messages", json={"text": "a\x00b"})
    assert "cannot be stored" in _error(nul, 400)["message"]
    assert not Turn.objects.exists()


def test_forged_cursors_and_odd_parameters_are_refused(http: httpx2.Client) -> None:
    for cursor in ("not-base64!", "W10", "WyJ4IiwxXQ", "eyJhIjoxfQ", "WzEsMiwzXQ"):
        error = _error(http.get("/api/conversations", params={"cursor": cursor}), 400)
        assert error["code"] == "invalid_cursor"
    assert _error(http.get("/api/tool-calls", params={"cursor": "WyIxIl0"}), 400)
    mine = http.post("/api/conversations", json={}).json()["id"]
    forged = {"cursor": "1 OR 1=1"}
    assert _error(http.get(f"/api/conversations/{mine}/messages", params=forged), 400)
    assert _error(http.get("/api/conversations", params={"limit": 10_000}), 422)
    assert _error(http.get("/api/nothing/here"), 404)["code"] == "unknown_url"
    assert _error(http.get("/v1/engines"), 404)["code"] == "unknown_url"
    assert http.get("/v1/chat/completions").status_code == 405


def test_a_token_only_counts_in_the_authorization_header(
    api_server: str, user: Any, provider: Any
) -> None:
    token = token_for(user)
    for url in (f"{api_server}/api/me", f"{api_server}/v1/models"):
        assert httpx2.get(url, params={"api_key": token}).status_code == 401
        assert httpx2.get(url, headers={"X-Api-Key": token}).status_code == 401
        assert httpx2.get(url, headers={"Authorization": f"Basic {token}"}).status_code == 401
        assert httpx2.get(url, cookies={"sessionid": token}).status_code == 401
        guess = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        error = _error(httpx2.get(url, headers={"Authorization": f"Bearer {guess}"}), 401)
        assert error["code"] == "invalid_api_key"


def test_edited_arguments_of_an_approval_are_checked_and_ones_own_call_stays_refused(
    api_server: str, user: Any, other_user: Any, conversation: Any
) -> None:
    from django.contrib.auth.models import Group

    ops = Group.objects.create(name="ops")
    other_user.groups.add(ops)
    turn = Turn.objects.create(conversation=conversation, user=user, phase="tools")
    call = ToolCall.objects.create(
        conversation=conversation, turn=turn, user=user, source="api", tool="current_time",
        group="time", arguments={"timezone": "UTC"}, status="awaiting_approval",
        approval_mode="approver", approver_group_ids=[ops.pk],
    )  # fmt: skip
    mine = {"Authorization": f"Bearer {token_for(user)}"}
    theirs = {"Authorization": f"Bearer {token_for(other_user, scopes=['approve'])}"}
    url = f"{api_server}/api/tool-calls/{call.pk}/approve"

    own = httpx2.post(url, json={"arguments": {"timezone": "UTC"}}, headers=mine)
    assert "not by you" in _error(own, 403)["message"]
    edited = httpx2.post(url, json={"arguments": {"timezone": 7}}, headers=theirs)
    assert _error(edited, 422)["param"] == "arguments"
    extra = httpx2.post(url, json={"arguments": {}, "approved": True}, headers=theirs)
    _error(extra, 422)
    call.refresh_from_db()
    assert call.status == "awaiting_approval" and call.decided_by is None
    refused = AuditRecord.objects.filter(tool_call=call, kind="approval", status="refused")
    assert refused.get().username == user.username


def test_another_persons_turn_stream_is_not_found(
    api_server: str, user: Any, other_user: Any
) -> None:
    theirs = Conversation.objects.create(owner=other_user)
    turn = Turn.objects.create(conversation=theirs, user=other_user, status="succeeded")
    headers = {"Authorization": f"Bearer {token_for(user)}"}
    response = httpx2.get(f"{api_server}/api/turns/{turn.pk}/events", headers=headers)
    assert _error(response, 404)["message"] == "turn not found"
    stop = httpx2.post(f"{api_server}/api/turns/{turn.pk}/stop", headers=headers)
    assert _error(stop, 404)
    assert json.loads(json.dumps(response.json()))  # one shape, parseable


def test_a_token_made_for_a_profile_keeps_to_its_tools_in_any_conversation(
    api_server: str, user: Any
) -> None:
    from chat_app.models import Agent
    from platform_app.api_tokens import api_token_create

    reader = Agent.objects.create(name="Reader", all_tools=False, tools=["file_read"])
    general = Agent.objects.create(name="Wide", all_tools=True)
    conversation = Conversation.objects.create(owner=user, agent=general)
    raw = api_token_create(user=user, name="reader", agent=reader)[1]
    headers = {"Authorization": f"Bearer {raw}"}

    sent = httpx2.post(
        f"{api_server}/api/conversations/{conversation.pk}/messages",
        json={"text": '/current_time {"timezone": "UTC"}'},
        headers=headers,
    )

    assert sent.status_code == 202, sent.text
    from tests.helpers import wait_for

    call = wait_for(lambda: ToolCall.objects.filter(tool="current_time").first(), timeout=15)
    assert call.status == "denied" and call.source == "api"
    assert call.error == "tool 'current_time' is not available to this agent"
    # And it cannot pick the wide profile as a model either.
    other = httpx2.post(f"{api_server}/api/conversations", json={"agent": "Wide"}, headers=headers)
    assert other.status_code == 404
