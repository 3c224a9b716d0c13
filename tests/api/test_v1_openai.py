"""/v1 with the official ``openai`` SDK (sync and async, streaming and not) against the real
app server: a request runs a governed turn of the token's owner — tools under their grants,
sandboxed, held for an approver, audited with source "api" — and the SDK reads the answer,
the usage and the documented errors."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from django.conf import settings
from django.contrib.auth.models import Group

from chat_app.models import Agent, Conversation, Message, Turn
from tests.api.conftest import token_for
from tests.helpers import tool_json, wait_for
from tests.llm_server import Call, Reply
from tests.tools.conftest import _ensure_searchable, configure, require_backend
from tools_app.models import AuditRecord, ToolCall
from tools_app.services.settings import function_approval_set


def client(url: str, token: str, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=token, max_retries=0, timeout=60, **options)


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


@pytest.mark.modes
def test_a_plain_turn_answers_through_the_sdk(
    api_server: str, llm: Any, provider: Any, user: Any, raw_token: str
) -> None:
    llm.script(Reply(text="Hello from **the agent**."))

    reply = client(api_server, raw_token).chat.completions.create(
        model="General", messages=ask("Say hello")
    )

    assert reply.choices[0].message.content == "Hello from **the agent**."
    assert reply.choices[0].finish_reason == "stop"
    assert reply.model == "General" and reply.object == "chat.completion"
    assert reply.usage is not None and reply.usage.total_tokens > 0
    extra = reply.model_extra["controlcenter"]
    assert extra["status"] == "succeeded" and extra["tool_calls"] == []
    conversation = Conversation.objects.get(pk=extra["conversation_id"])
    assert conversation.owner == user and conversation.agent.name == "General"
    assert conversation.source == Conversation.Source.API  # the sidebar's API list (issue 39)
    turn = Turn.objects.get(pk=extra["turn_id"])
    assert turn.source == Turn.Source.API and turn.conversation == conversation
    assert [m.content for m in conversation.messages.order_by("id")] == [
        "Say hello",
        "Hello from **the agent**.",
    ]


@pytest.mark.modes
def test_a_streamed_turn_runs_a_sandboxed_tool_audited_as_api(
    api_server: str, llm: Any, provider: Any, user: Any, raw_token: str
) -> None:
    require_backend("bubblewrap")
    _ensure_searchable(Path(settings.WORKSPACES_DIR))
    configure("shell", sandbox_backend="bubblewrap")
    llm.script(
        Reply(calls=[Call("shell_exec", {"command": "echo sandboxed-$((6*7))"})]),
        lambda body: Reply(
            text=f"The sandbox printed {tool_json(body['messages'][-1]['content'])['stdout']}"
        ),
    )

    stream = client(api_server, raw_token).chat.completions.create(
        model="General",
        messages=ask("Run it"),
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)

    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert '> 🔧 `shell_exec` `{"command": "echo sandboxed-$((6*7))"}` → succeeded' in content
    assert content.endswith("The sandbox printed sandboxed-42\n")
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert [c.choices[0].finish_reason for c in finish] == ["stop"]
    updates = [c.model_extra["controlcenter"].get("tool_call") for c in chunks if c.model_extra]
    statuses = [u["status"] for u in updates if u]
    # Each change of the call, as its card announced it (a worker may be done before the
    # "running" card is read: the stream shows what it was sent).
    assert statuses[-1] == "succeeded" and len(statuses) >= 2
    call = ToolCall.objects.get(tool="shell_exec")
    assert call.source == ToolCall.Source.API and call.user == user
    assert call.sandbox_id and call.result["stdout"].strip() == "sandboxed-42"
    assert AuditRecord.objects.get(tool_call=call, kind="call").source == "api"


@pytest.mark.modes
def test_the_async_client_streams_and_answers_whole(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.script(
        Reply(text="Streamed, asynchronously.", chunk_size=3),
        Reply(calls=[Call("current_time", {"timezone": "Asia/Tokyo"})]),
        Reply(text="Done."),
    )

    async def main() -> tuple[str, Any]:
        sdk = openai.AsyncOpenAI(
            base_url=f"{api_server}/v1", api_key=raw_token, max_retries=0, timeout=60
        )
        pieces = []
        stream = await sdk.chat.completions.create(
            model="General", messages=ask("Stream it"), stream=True
        )
        async for chunk in stream:
            pieces.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        whole = await sdk.chat.completions.create(
            model="General", messages=ask("What time is it in Tokyo?"), extra_body={"trace": False}
        )
        return "".join(pieces), whole

    streamed, whole = asyncio.run(main())

    assert streamed == "Streamed, asynchronously."
    assert whole.choices[0].message.content == "Done."  # no trace: asked for none
    calls = whole.model_extra["controlcenter"]["tool_calls"]
    assert [(c["tool"], c["status"]) for c in calls] == [("current_time", "succeeded")]


@pytest.mark.modes
def test_an_approval_holds_the_stream_until_an_approver_decides(
    api_server: str, llm: Any, provider: Any, user: Any, other_user: Any, staff_user: Any
) -> None:
    ops = Group.objects.create(name="ops")
    other_user.groups.add(ops)
    function_approval_set(
        user=staff_user, tool="current_time", mode="approver", approver_group_ids=[ops.pk]
    )
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="Approved and done."),
    )
    requester = token_for(user)
    approver = token_for(other_user, scopes=["approve", "read"])
    lines: list[str] = []

    def stream() -> None:
        with client(api_server, requester).chat.completions.with_streaming_response.create(
            model="General", messages=ask("Time, please"), stream=True
        ) as response:
            for line in response.iter_lines():
                lines.append(line)

    reader = threading.Thread(target=stream)
    reader.start()
    call = wait_for(
        lambda: ToolCall.objects.filter(status="awaiting_approval").first(),
        timeout=30,
        message="the call to wait for an approver",
    )
    wait_for(lambda: _keepalives(lines) >= 2, timeout=15, message="keep-alive comments")
    assert reader.is_alive()  # held, not answered
    # The requester's own token cannot approve it: a token is its owner.
    own = _post(api_server, requester, f"/api/tool-calls/{call.pk}/approve")
    assert own.status_code == 403 and "not by you" in own.json()["error"]["message"]
    approved = _post(api_server, approver, f"/api/tool-calls/{call.pk}/approve", note="fine")
    assert approved.status_code == 200, approved.text
    reader.join(timeout=30)

    assert not reader.is_alive()
    data = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    content = "".join(d["choices"][0]["delta"].get("content") or "" for d in data if d["choices"])
    assert "waits for approval by ops" in content
    assert content.endswith("Approved and done.")
    assert lines[-1] == "data: [DONE]" or lines[-2] == "data: [DONE]"
    call.refresh_from_db()
    assert call.status == "succeeded" and call.decided_by == other_user
    assert AuditRecord.objects.filter(tool_call=call, kind="approval", status="refused").exists()


def _keepalives(lines: list[str]) -> int:
    return sum(1 for line in lines if line.startswith(": keep-alive"))


def _post(url: str, token: str, path: str, **body: Any) -> httpx2.Response:
    return httpx2.post(
        f"{url}{path}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


@pytest.mark.modes
@pytest.mark.grants
def test_a_model_the_owner_may_not_use_is_not_found(
    api_server: str, provider: Any, user: Any
) -> None:
    from tools_app.services.grants import everyone_group

    everyone_group().agent_profiles.add(Agent.objects.create(name="Open", is_default=True))
    Agent.objects.create(name="Secret")  # given to no group: admins only
    sdk = client(api_server, token_for(user))

    assert [m.id for m in sdk.models.list()] == ["Open"]
    with pytest.raises(openai.NotFoundError) as missing:
        sdk.chat.completions.create(model="Secret", messages=ask("hi"))
    error = missing.value.body
    assert error["code"] == "model_not_found" and error["param"] == "model"
    assert "`Secret` does not exist or you do not have access to it" in error["message"]
    with pytest.raises(openai.NotFoundError):
        sdk.models.retrieve("Secret")
    assert not Conversation.objects.exists()


@pytest.mark.modes
def test_a_token_without_the_chat_scope_is_refused(
    api_server: str, provider: Any, user: Any
) -> None:
    sdk = client(api_server, token_for(user, scopes=["read", "mcp"]))

    with pytest.raises(openai.PermissionDeniedError) as refused:
        sdk.chat.completions.create(model="General", messages=ask("hi"))
    assert refused.value.status_code == 403
    assert refused.value.body["code"] == "insufficient_scope"
    assert "does not have the 'chat' scope" in refused.value.body["message"]
    with pytest.raises(openai.PermissionDeniedError):
        sdk.models.list()
    assert not Turn.objects.exists()


@pytest.mark.modes
def test_the_rate_limit_answers_429_with_retry_after(
    api_server: str, provider: Any, user: Any
) -> None:
    sdk = client(api_server, token_for(user, rate_limit_per_minute=2))
    sdk.models.list()
    sdk.models.list()

    with pytest.raises(openai.RateLimitError) as limited:
        sdk.models.list()

    response = limited.value.response
    assert response.status_code == 429 and 1 <= int(response.headers["retry-after"]) <= 60
    assert limited.value.body["type"] == "rate_limit_error"
    assert "rate limit of 2 requests a minute reached" in limited.value.body["message"]


def test_caller_supplied_tools_are_refused_clearly(
    api_server: str, provider: Any, raw_token: str
) -> None:
    tool = {"type": "function", "function": {"name": "mine", "parameters": {"type": "object"}}}
    sdk = client(api_server, raw_token)
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.chat.completions.create(model="General", messages=ask("hi"), tools=[tool])
    assert refused.value.body["code"] == "tools_not_supported"
    assert refused.value.body["param"] == "tools"
    history = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "tool_calls": [{"id": "a", "type": "function",
                                              "function": {"name": "mine", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "42"},
        {"role": "user", "content": "and?"},
    ]  # fmt: skip
    with pytest.raises(openai.BadRequestError) as again:
        sdk.chat.completions.create(model="General", messages=history)
    assert again.value.body["code"] == "tools_not_supported"
    assert not Conversation.objects.exists()


def test_a_new_conversation_keeps_the_clients_history_and_one_goes_on_by_id(
    api_server: str, llm: Any, provider: Any, user: Any, other_user: Any, raw_token: str
) -> None:
    llm.script(Reply(text="Paris."), Reply(text="About 2.1 million."))
    sdk = client(api_server, raw_token)
    first = sdk.chat.completions.create(
        model="General",
        messages=[
            {"role": "system", "content": "Answer in one word."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Which country?"},
            {"role": "user", "content": [{"type": "text", "text": "France, I said."}]},
        ],
    )
    conversation_id = first.model_extra["controlcenter"]["conversation_id"]
    sent = llm.requests[-1]["messages"]
    # The provider sends the two user messages in a row as one.
    assert [m["role"] for m in sent[1:]] == ["user", "assistant", "user"]
    assert "Instructions from the API client:\n\nAnswer in one word." in sent[1]["content"]
    assert "Capital of France?" in sent[1]["content"] and sent[-1]["content"] == "France, I said."
    assert Conversation.objects.get(pk=conversation_id).title == "Capital of France?"

    then = sdk.chat.completions.create(
        model="General",
        messages=ask("Its population?"),
        extra_headers={"X-Conversation-Id": str(conversation_id)},
    )

    assert then.choices[0].message.content == "About 2.1 million."
    assert then.model_extra["controlcenter"]["conversation_id"] == conversation_id
    assert Message.objects.filter(conversation_id=conversation_id).count() == 7
    # Someone else's conversation (or one that does not exist) is not found, alike.
    theirs = Conversation.objects.create(owner=other_user)
    for missing in (theirs.pk, theirs.pk + 100):
        with pytest.raises(openai.NotFoundError) as refused:
            sdk.chat.completions.create(
                model="General", messages=ask("hi"), extra_body={"conversation_id": missing}
            )
        assert refused.value.body["code"] == "conversation_not_found"
    assert not theirs.messages.exists()


@pytest.mark.modes
def test_a_failed_turn_is_a_502_the_sdk_does_not_retry(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.set_default(Reply(error=(400, {"error": {"message": "the model is gone"}})))
    sdk = openai.OpenAI(base_url=f"{api_server}/v1", api_key=raw_token, max_retries=2)

    with pytest.raises(openai.InternalServerError) as failed:
        sdk.chat.completions.create(model="General", messages=ask("hi"))

    assert failed.value.status_code == 502
    assert failed.value.body["code"] == "turn_failed"
    assert "the model is gone" in failed.value.body["message"]
    assert Turn.objects.count() == 1  # not run again by the SDK's retries


def test_a_command_answers_through_v1_and_is_audited_as_api(
    api_server: str, provider: Any, raw_token: str
) -> None:
    reply = client(api_server, raw_token).chat.completions.create(
        model="General", messages=ask('/current_time {"timezone": "UTC"}')
    )
    content = reply.choices[0].message.content
    assert content.startswith('> 🔧 `current_time` `{"timezone": "UTC"}` → succeeded')
    assert '"timezone": "UTC"' in content.split("```json", 1)[1]
    call = ToolCall.objects.get()
    assert call.source == ToolCall.Source.API
    assert AuditRecord.objects.get(tool_call=call, kind="call").source == "api"
    help_reply = client(api_server, raw_token).chat.completions.create(
        model="General", messages=ask("/help")
    )
    assert "current_time" in help_reply.choices[0].message.content


@pytest.mark.modes
def test_a_client_that_leaves_mid_stream_stops_its_turn(
    api_server: str, llm: Any, provider: Any, raw_token: str
) -> None:
    llm.script(Reply(text="word " * 400, chunk_size=5, chunk_delay=0.05))
    with client(api_server, raw_token).chat.completions.with_streaming_response.create(
        model="General", messages=ask("Talk for a while"), stream=True
    ) as response:
        for line in response.iter_lines():
            if '"content": "word' in line:
                break  # leave after the first words

    turn = wait_for(
        lambda: Turn.objects.filter(status=Turn.Status.CANCELLED).first(),
        timeout=15,
        message="the turn to be stopped",
    )
    assert turn.source == Turn.Source.API
    assert llm.wait_for_disconnects(1, timeout=10)  # the model stream was cut too
