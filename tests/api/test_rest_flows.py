"""The REST API used as a program would, against the real server: start a conversation, send
a message, follow its turn as server-sent events, read and export what it did; admins change
a tool's settings and read the audit log of it."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from chat_app.models import Conversation, Turn
from tests.api.conftest import token_for
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, ToolCall


class Api:
    def __init__(self, url: str, token: str) -> None:
        self.http = httpx2.Client(
            base_url=f"{url}/api", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

    def __getattr__(self, method: str) -> Any:
        return getattr(self.http, method)

    def events(self, turn_id: int) -> list[tuple[str, Any]]:
        """The turn's server-sent events until its ``end``: (name, data) pairs, keep-alive
        comments as ("", None)."""
        out: list[tuple[str, Any]] = []
        name = ""
        with self.http.stream("GET", f"/turns/{turn_id}/events") as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if line.startswith(":"):
                    out.append(("", None))
                elif line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    out.append((name, json.loads(line[6:])))
        return out


@pytest.mark.modes
def test_a_program_sends_a_message_and_follows_its_turn(
    api_server: str, llm: Any, provider: Any, user: Any
) -> None:
    api = Api(api_server, token_for(user))
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "Europe/Berlin"})]),
        Reply(text="It is teatime in Berlin.", chunk_size=4, chunk_delay=0.02),
    )
    conversation = api.post("/conversations", json={"title": "From a script"}).json()
    made = Conversation.objects.get(pk=conversation["id"])
    assert made.source == Conversation.Source.API  # the sidebar's API list (issue 39)

    sent = api.post(f"/conversations/{conversation['id']}/messages", json={"text": "Time?"})

    assert sent.status_code == 202, sent.text
    turn = sent.json()["turn"]
    assert turn["source"] == "api" and turn["status"] == "running"
    events = api.events(turn["id"])
    text = "".join(data["text"] for name, data in events if name == "text")
    assert text == "It is teatime in Berlin."
    calls = [data for name, data in events if name == "tool_call"]
    assert calls and calls[-1]["tool"] == "current_time" and calls[-1]["status"] == "succeeded"
    assert events[-1][0] == "end" and events[-1][1]["status"] == "succeeded"
    assert events[-1][1]["usage"]["total_tokens"] > 0
    # The same turn, read back.
    assert api.get(f"/turns/{turn['id']}").json()["status"] == "succeeded"
    messages = api.get(f"/conversations/{conversation['id']}/messages").json()["items"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"]
    call_id = messages[1]["tool_calls"][0]["id"]
    call = api.get(f"/tool-calls/{call_id}")
    assert call.json()["source"] == "api" and call.json()["result"]["success"] is True
    assert api.get(f"/tool-calls/{call_id}", headers={"If-None-Match": call.headers["etag"]})
    exported = api.get(f"/conversations/{conversation['id']}/export", params={"format": "json"})
    assert exported.json()["messages"][-1]["content"] == "It is teatime in Berlin."
    markdown = api.get(f"/conversations/{conversation['id']}/export?format=markdown")
    assert markdown.headers["content-type"].startswith("text/markdown")
    assert ToolCall.objects.get(pk=call_id).source == "api"
    assert Turn.objects.get(pk=turn["id"]).source == "api"
    # A finished turn's events: its end at once.
    assert api.events(turn["id"])[-1] == ("end", events[-1][1])


@pytest.mark.modes
def test_an_admin_changes_a_tool_over_the_api_and_reads_it_in_the_audit_log(
    api_server: str, staff_user: Any, user: Any
) -> None:
    admin = Api(api_server, token_for(staff_user))
    assert admin.get("/tools/research").json()["settings"]["search_api_key"] == "not stored"
    changed = admin.patch("/tools/research", json={"settings": {"search_api_key": "sk-hush-42"}})
    assert changed.status_code == 200, changed.text
    assert changed.json()["settings"]["search_api_key"] == "stored"
    assert "sk-hush-42" not in changed.text
    assert "sk-hush-42" not in admin.get("/audit/export", params={"tool": "research"}).text
    refused = admin.patch("/tools/http", json={"settings": {"timeout_seconds": "soon"}})
    assert refused.status_code == 422
    assert refused.json()["error"]["param"] == "settings"
    assert "timeout_seconds" in refused.json()["error"]["message"]
    assert admin.patch("/tools/functions/current_time", json={"enabled": False}).json() == {
        "name": "current_time",
        "enabled": False,
        "approval_mode": "none",
        "reasoning_for_call": False,
    }
    # The member's turn can no longer use it (binding reads the same configuration).
    member = Api(api_server, token_for(user))
    conversation = member.post("/conversations", json={}).json()
    sent = member.post(
        f"/conversations/{conversation['id']}/messages", json={"text": "/current_time"}
    ).json()
    end = member.events(sent["turn"]["id"])[-1]
    assert end == ("end", {"status": "failed", "error": "", "usage": end[1]["usage"]})
    log = admin.get("/audit", params={"tool": "current_time", "kind": "settings"}).json()
    assert log["items"][0]["detail"]["after"] == {"enabled": False}
    assert log["items"][0]["username"] == staff_user.username
    lines = admin.get("/audit/export", params={"format": "jsonl", "tool": "current_time"}).text
    assert {json.loads(line)["kind"] for line in lines.splitlines()} >= {"settings", "call"}
    assert AuditRecord.objects.filter(kind="call", tool="current_time", status="denied").exists()
