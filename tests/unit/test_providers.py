"""The streaming adapters, end to end through the real SDKs against the scripted server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.providers import (
    ChatMessage,
    LLMProvider,
    ModelReply,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolsNotSupported,
    ToolSpec,
    make_provider,
)
from chat_app.providers.anthropic_provider import AnthropicProvider
from chat_app.providers.base import looks_like_tools_unsupported, parse_json_reply, sdk_timeout
from chat_app.providers.openai_provider import OpenAIProvider
from tests.llm_server import Call, Reply, ScriptedLLM

KINDS = ["openai", "anthropic"]
SHELL = ToolSpec(
    name="shell_exec",
    description="Run a shell command.",
    parameters={
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
        "additionalProperties": False,
    },
    strict=True,
)
READ = ToolSpec(
    name="file_read",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
HI = [ChatMessage(role="user", content="hi")]
TITLE_SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}},
    "required": ["title"],
}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def provider(llm: ScriptedLLM, kind: str, **kwargs: Any) -> LLMProvider:
    base_url = llm.openai_base_url if kind == "openai" else llm.anthropic_base_url
    options: dict[str, Any] = {"api_key": "", "model": "test-model", "timeout": 10.0, **kwargs}
    return make_provider(kind, base_url=base_url, **options)


async def collect(
    client: LLMProvider,
    *,
    messages: list[ChatMessage] = HI,
    tools: list[ToolSpec] | None = None,
    system: str = "Be brief.",
    max_tokens: int | None = None,
) -> list[StreamEvent]:
    return [
        event
        async for event in client.stream(
            system=system, messages=messages, tools=tools, max_tokens=max_tokens
        )
    ]


def final(events: list[StreamEvent]) -> ModelReply:
    assert isinstance(events[-1], ModelReply)
    assert not any(isinstance(e, ModelReply) for e in events[:-1])
    return events[-1]


def test_make_provider_builds_each_kind_and_refuses_others() -> None:
    assert isinstance(make_provider("openai", base_url="x", api_key="", model="m"), OpenAIProvider)
    anthropic = make_provider("anthropic", base_url="x", api_key="k", model="m", timeout=5)
    assert isinstance(anthropic, AnthropicProvider) and anthropic.timeout == 5
    with pytest.raises(ProviderError, match="unknown LLM provider kind 'gemini'"):
        make_provider("gemini", base_url="x", api_key="", model="m")


# --- streaming replies ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_it_streams_text_deltas_then_the_reply(llm: ScriptedLLM, kind: str) -> None:
    llm.script(Reply(text="Hello! Ünïcode ✓ works fine.", chunk_size=4))
    events = await collect(provider(llm, kind))
    reply = final(events)
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1
    assert "".join(deltas) == reply.text == "Hello! Ünïcode ✓ works fine."
    assert reply.tool_calls == []
    assert reply.stop_reason == ("stop" if kind == "openai" else "end_turn")
    assert reply.usage["input_tokens"] > 0 and reply.usage["output_tokens"] > 0


@pytest.mark.parametrize("kind", KINDS)
async def test_it_assembles_parallel_tool_calls(llm: ScriptedLLM, kind: str) -> None:
    llm.script(
        Reply(
            text="Running both.",
            calls=[
                Call("shell_exec", {"command": "ls -la /workspace/src"}, id="call_a"),
                Call("file_read", {"path": "docs/ÜBER.md"}, id="call_b"),
                Call("time_now", {}, id="call_c"),
            ],
            chunk_size=3,
        )
    )
    events = await collect(provider(llm, kind), tools=[SHELL, READ])
    reply = final(events)
    assert reply.text == "Running both."
    assert reply.tool_calls == [
        ToolCallRequest("call_a", "shell_exec", '{"command": "ls -la /workspace/src"}'),
        ToolCallRequest("call_b", "file_read", '{"path": "docs/ÜBER.md"}'),
        ToolCallRequest("call_c", "time_now", "{}"),
    ]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started == [
        ToolCallStarted(0, "call_a", "shell_exec"),
        ToolCallStarted(1, "call_b", "file_read"),
        ToolCallStarted(2, "call_c", "time_now"),
    ]
    assert reply.stop_reason == ("tool_calls" if kind == "openai" else "tool_use")


async def test_it_announces_openai_calls_as_soon_as_their_names_arrive(llm: ScriptedLLM) -> None:
    # Interleaved deltas: both names come before either call's arguments are complete.
    llm.script(Reply(calls=[Call("a", {"x": "y" * 40}), Call("b", {"z": 1})], chunk_size=2))
    events = await collect(provider(llm, "openai"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ToolCallStarted", "ToolCallStarted", "ModelReply"]
    assert [json.loads(c.arguments) for c in final(events).tool_calls] == [
        {"x": "y" * 40},
        {"z": 1},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_it_passes_broken_argument_json_through_raw(llm: ScriptedLLM, kind: str) -> None:
    llm.script(Reply(calls=[Call("shell_exec", '{"command": "echo \\"unterminated')]))
    reply = final(await collect(provider(llm, kind), tools=[SHELL]))
    assert reply.tool_calls[0].arguments == '{"command": "echo \\"unterminated'


# --- requests as sent -----------------------------------------------------------------------

HISTORY = [
    ChatMessage(role="user", content="list files and read the readme"),
    ChatMessage(
        role="assistant",
        content="On it.",
        tool_calls=[
            ToolCallRequest("c1", "shell_exec", '{"command": "ls"}'),
            ToolCallRequest("c2", "file_read", '{"path": "README'),  # broken by the model
        ],
    ),
    ChatMessage(role="tool", content='{"success": true}', tool_call_id="c1", name="shell_exec"),
    ChatMessage(
        role="tool",
        content='{"success": false, "error": "arguments are not valid JSON"}',
        tool_call_id="c2",
        name="file_read",
        is_error=True,
    ),
    ChatMessage(role="assistant", content="The listing is empty."),
    ChatMessage(role="user", content="thanks"),
]


async def test_it_sends_openai_history_tools_and_options(llm: ScriptedLLM) -> None:
    await collect(provider(llm, "openai"), messages=HISTORY, tools=[SHELL, READ], max_tokens=99)
    [body] = llm.requests
    assert body["_path"] == "/v1/chat/completions"
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 99
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list files and read the readme"},
        {
            "role": "assistant",
            "content": "On it.",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "shell_exec", "arguments": '{"command": "ls"}'},
                },
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "file_read", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"success": true}'},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": '{"success": false, "error": "arguments are not valid JSON"}',
        },
        {"role": "assistant", "content": "The listing is empty."},
        {"role": "user", "content": "thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "shell_exec",
                "description": "Run a shell command.",
                "parameters": SHELL.parameters,
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "file_read",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        },
    ]


async def test_it_leaves_out_optional_openai_fields(llm: ScriptedLLM) -> None:
    await collect(provider(llm, "openai"), system="")
    [body] = llm.requests
    assert "tools" not in body and "max_tokens" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


async def test_it_sends_anthropic_history_as_alternating_block_turns(llm: ScriptedLLM) -> None:
    await collect(provider(llm, "anthropic"), messages=HISTORY, tools=[SHELL, READ])
    [body] = llm.requests
    assert body["_path"] == "/v1/messages"
    assert body["system"] == "Be brief."
    assert body["max_tokens"] == 4096
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "list files and read the readme"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "On it."},
                {"type": "tool_use", "id": "c1", "name": "shell_exec", "input": {"command": "ls"}},
                {"type": "tool_use", "id": "c2", "name": "file_read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": '{"success": true}'},
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": '{"success": false, "error": "arguments are not valid JSON"}',
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "The listing is empty."}]},
        {"role": "user", "content": [{"type": "text", "text": "thanks"}]},
    ]
    assert body["tools"] == [
        {
            "name": "shell_exec",
            "description": "Run a shell command.",
            "input_schema": SHELL.parameters,
        },
        {"name": "file_read", "description": "Read a file.", "input_schema": READ.parameters},
    ]


async def test_it_merges_a_user_message_after_tool_results_and_skips_empty_turns(
    llm: ScriptedLLM,
) -> None:
    messages = [
        ChatMessage(role="user", content="go"),
        ChatMessage(role="assistant", tool_calls=[ToolCallRequest("t1", "time_now", "{}")]),
        ChatMessage(role="tool", content="", tool_call_id="t1", name="time_now"),
        ChatMessage(role="user", content="and now?"),
        ChatMessage(role="assistant", content=""),
    ]
    await collect(provider(llm, "anthropic"), messages=messages, system="", max_tokens=50)
    [body] = llm.requests
    assert "system" not in body and "tools" not in body
    assert body["max_tokens"] == 50
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "(no output)"},
        {"type": "text", "text": "and now?"},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_it_sends_the_providers_temperature_and_longest_reply(
    llm: ScriptedLLM, kind: str
) -> None:
    client = provider(llm, kind, temperature=0.0, max_output_tokens=200)
    await collect(client)
    await collect(client, max_tokens=50)  # a caller's own cap (a title) wins
    llm.script(Reply(text='{"title": "T"}'))
    await client.complete_json(system="", messages=HI, schema=TITLE_SCHEMA, name="title")
    first, capped, structured = llm.requests
    assert (first["temperature"], first["max_tokens"]) == (0.0, 200)
    assert (capped["temperature"], capped["max_tokens"]) == (0.0, 50)
    assert (structured["temperature"], structured["max_tokens"]) == (0.0, 200)


async def test_without_them_the_servers_defaults_stand(llm: ScriptedLLM) -> None:
    await collect(provider(llm, "openai"))
    await collect(provider(llm, "anthropic"))
    openai_body, anthropic_body = llm.requests
    assert "temperature" not in openai_body and "max_tokens" not in openai_body
    assert "temperature" not in anthropic_body and anthropic_body["max_tokens"] == 4096


# --- structured output ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_complete_json_returns_the_object(llm: ScriptedLLM, kind: str) -> None:
    llm.script(Reply(text='{"title": "Files in the workspace"}'))
    result = await provider(llm, kind).complete_json(
        system="Name the conversation.", messages=HI, schema=TITLE_SCHEMA, name="title"
    )
    assert result == {"title": "Files in the workspace"}
    [body] = llm.requests
    assert "stream" not in body
    if kind == "openai":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "title", "schema": TITLE_SCHEMA},
        }
    else:
        assert body["tool_choice"] == {"type": "tool", "name": "title"}
        assert body["tools"][0]["input_schema"] == TITLE_SCHEMA


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("Sure! The title is Files.", "not valid JSON|did not answer through"),
        (
            '{"name": "Files"}',
            "does not match the schema at \\(top level\\): 'title' is a required",
        ),
        ('{"title": 3}', "does not match the schema at title: 3 is not of type 'string'"),
    ],
)
async def test_complete_json_refuses_unusable_replies(
    llm: ScriptedLLM, kind: str, text: str, words: str
) -> None:
    llm.script(Reply(text=text))
    with pytest.raises(ProviderError, match=words):
        await provider(llm, kind).complete_json(
            system="", messages=HI, schema=TITLE_SCHEMA, name="title"
        )


async def test_complete_json_falls_back_when_json_schema_is_unsupported(llm: ScriptedLLM) -> None:
    refusal = {"error": {"message": "Unknown response_format type: json_schema"}}
    llm.script(Reply(error=(400, refusal)), Reply(text='```json\n{"title": "T"}\n```'))
    result = await provider(llm, "openai").complete_json(
        system="Be brief.", messages=HI, schema=TITLE_SCHEMA, name="title"
    )
    assert result == {"title": "T"}
    retry = llm.requests[1]
    assert "response_format" not in retry
    assert '"required": ["title"]' in retry["messages"][0]["content"]


def test_parse_json_reply_unwraps_a_code_fence() -> None:
    assert parse_json_reply('```json\n{"title": "x"}\n```', TITLE_SCHEMA) == {"title": "x"}
    with pytest.raises(ProviderError, match="not a JSON object"):
        parse_json_reply("[1, 2]", TITLE_SCHEMA)


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_it_raises_tools_not_supported_when_tools_are_refused(kind: str) -> None:
    with ScriptedLLM(reject_tools=True) as llm:
        with pytest.raises(ToolsNotSupported, match="does not support tools") as caught:
            await collect(provider(llm, kind), tools=[SHELL])
        assert caught.value.status_code == 400
        # The same endpoint still answers without tools (what text-fallback mode relies on).
        assert final(await collect(provider(llm, kind))).text == "(no scripted reply)"


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (400, "registry.ollama.ai/library/gemma:2b does not support tools"),
        (400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'),
        (500, "tools param requires --jinja flag"),
        (422, '[{"loc": ["body", "tools"], "msg": "Extra inputs are not permitted"}]'),
        (404, "This model does not support function calling"),
    ],
)
def test_it_recognises_known_tools_refusals(status: int, message: str) -> None:
    assert looks_like_tools_unsupported(status, message)


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (
            400,
            "messages with role 'tool' must be a response to a preceding message with 'tool_calls'",
        ),
        (401, "this key does not support tools"),  # auth problems are never about tools
        (400, "context length exceeded"),
        (503, "tools are not supported while overloaded"),
    ],
)
def test_it_does_not_mistake_other_errors_for_tools_refusals(status: int, message: str) -> None:
    assert not looks_like_tools_unsupported(status, message)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_history_error_is_not_a_tools_refusal(llm: ScriptedLLM, kind: str) -> None:
    message = (
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"
    )
    llm.script(Reply(error=(400, {"error": {"message": message, "type": "invalid_request_error"}})))
    with pytest.raises(ProviderError) as caught:
        await collect(provider(llm, kind), tools=[SHELL])
    assert not isinstance(caught.value, ToolsNotSupported)
    assert caught.value.message == f"the LLM rejected the request (400): {message}"


@pytest.mark.parametrize("kind", KINDS)
async def test_it_explains_a_rejected_api_key(kind: str) -> None:
    with ScriptedLLM(api_key="the-right-key") as llm:
        with pytest.raises(ProviderError, match=r"^the LLM rejected the API key \(401\)") as caught:
            await collect(provider(llm, kind, api_key="a-wrong-key"))
        assert caught.value.status_code == 401
        ok = await collect(provider(llm, kind, api_key="the-right-key"))
        assert final(ok).text == "(no scripted reply)"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("status", "words"),
    [
        (404, "has no such endpoint or model 'test-model' (404): model not found"),
        (429, "the LLM is rate limiting or out of quota (429): model not found"),
        (500, "the LLM server failed (500): model not found"),
    ],
)
async def test_it_explains_http_errors(
    llm: ScriptedLLM, kind: str, status: int, words: str
) -> None:
    llm.script(Reply(error=(status, {"error": {"message": "model not found", "type": "x"}})))
    with pytest.raises(ProviderError) as caught:
        await collect(provider(llm, kind))
    assert words in caught.value.message
    assert caught.value.status_code == status


@pytest.mark.parametrize("kind", KINDS)
async def test_it_explains_an_unreachable_server(kind: str) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base_url = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    client = make_provider(kind, base_url=base_url, api_key="", model="m", timeout=5)
    with pytest.raises(ProviderError) as caught:
        await collect(client)
    assert caught.value.message == f"cannot reach the LLM at {base_url}: connection refused"
    assert caught.value.status_code is None


@pytest.mark.parametrize("kind", KINDS)
async def test_it_explains_a_host_name_that_does_not_resolve(kind: str) -> None:
    base_url = "http://no-such-host.invalid" + ("/v1" if kind == "openai" else "")
    client = make_provider(kind, base_url=base_url, api_key="", model="m", timeout=5)
    with pytest.raises(ProviderError) as caught:
        await collect(client)
    words = "the host name does not resolve"
    assert caught.value.message == f"cannot reach the LLM at {base_url}: {words}"
    assert caught.value.retryable


@pytest.mark.parametrize("kind", KINDS)
async def test_a_connection_reset_mid_reply_is_not_called_a_timeout(
    llm: ScriptedLLM, kind: str
) -> None:
    # The SDKs' aiohttp transport re-raises some lost connections as httpx's ConnectTimeout
    # (a refused one does fail as a timeout without chat_app.providers.base reading aiohttp's
    # own error): a reset stays a broken reply, whatever the wrapper's name.
    llm.script(Reply(text="half an answer", reset_after_text=True))
    with pytest.raises(ProviderError) as caught:
        await collect(provider(llm, kind, timeout=30.0))
    assert "broke mid-reply" in caught.value.message, caught.value.message
    assert "30 s" not in caught.value.message
    assert caught.value.retryable


def test_a_name_lookup_and_a_pooled_connection_wait_no_longer_than_connecting() -> None:
    # The aiohttp transport bounds those by ``pool``, the socket's connect by ``connect``.
    limits = sdk_timeout(120.0)
    assert (limits.connect, limits.pool, limits.read) == (10.0, 10.0, 120.0)
    assert sdk_timeout(3.0).pool == 3.0


@pytest.mark.parametrize("kind", KINDS)
async def test_a_malformed_response_start_is_a_provider_error(kind: str) -> None:
    # aiohttp refuses a header line over 8 KB (h11 took it): its error is not one the SDK's
    # transport renames, and OpenAI's SDK does not wrap it either.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]

    def answer() -> None:
        with server, contextlib.suppress(OSError):
            conn, _ = server.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")

    threading.Thread(target=answer, daemon=True).start()
    base_url = f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")
    client = make_provider(kind, base_url=base_url, api_key="", model="m", timeout=5)
    with pytest.raises(ProviderError) as caught:
        await collect(client)
    assert caught.value.message.startswith(f"cannot reach the LLM at {base_url}: ")
    assert caught.value.retryable


@pytest.mark.parametrize("cls", [OpenAIProvider, AnthropicProvider])
async def test_the_sdk_clients_stream_over_the_sdks_aiohttp_transport(
    cls: type[LLMProvider],
) -> None:
    # httpx's pure-Python HTTP/1.1 parser cost a streamed reply ~1.6 ms more CPU than aiohttp's
    # (bench/HISTORY.md, issue 38): both SDKs offer aiohttp as their transport.
    client = cls.new_sdk_client(base_url="http://127.0.0.1:9/v1", api_key="", timeout=5)
    try:
        transport = client._client._transport
        assert type(transport).__name__ == "AiohttpTransport", type(transport)
    finally:
        await client.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_it_explains_a_server_that_stalls(llm: ScriptedLLM, kind: str) -> None:
    llm.script(Reply(text="thinking", hang_after_text=True))
    with pytest.raises(ProviderError, match=r"stopped sending for 0\.5 s mid-reply"):
        await collect(provider(llm, kind, timeout=0.5))


@pytest.mark.parametrize("kind", KINDS)
async def test_it_explains_a_stream_that_breaks_off(llm: ScriptedLLM, kind: str) -> None:
    llm.script(Reply(text="half a thought", hang_after_text=True))
    client = provider(llm, kind)
    got_text = asyncio.Event()

    async def consume() -> None:
        async for event in client.stream(system="", messages=HI, tools=None):
            if isinstance(event, TextDelta):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 5)
    await asyncio.to_thread(llm.stop)  # the server dies mid-reply
    with pytest.raises(ProviderError, match="broke mid-reply"):
        await asyncio.wait_for(task, 5)


@pytest.mark.parametrize("kind", KINDS)
async def test_it_reports_an_error_sent_inside_the_stream(llm: ScriptedLLM, kind: str) -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    llm.script(Reply(text="Let me", stream_error=overloaded))
    with pytest.raises(ProviderError) as caught:
        await collect(provider(llm, kind))
    assert caught.value.message == "the LLM reported an error mid-reply: Overloaded"


@pytest.mark.parametrize(
    "body",
    [
        {"object": "error", "message": "tools param requires --jinja flag", "code": 500},  # vLLM
        {"detail": [{"loc": ["body", "tools"], "msg": "Extra inputs are not permitted"}]},
        {"error": "registry.ollama.ai/library/phi does not support tools"},
    ],
)
async def test_it_finds_tools_refusals_in_any_error_body_shape(
    llm: ScriptedLLM, body: dict[str, Any]
) -> None:
    llm.script(Reply(error=(422, body)))
    with pytest.raises(ToolsNotSupported):
        await collect(provider(llm, "openai"), tools=[SHELL])


# --- cancellation ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_mid_stream_closes_the_connection_at_once(
    llm: ScriptedLLM, kind: str
) -> None:
    llm.script(Reply(text="streaming until stopped", hang_after_text=True))
    client = provider(llm, kind)
    got_text = asyncio.Event()

    async def consume() -> None:
        async for event in client.stream(system="", messages=HI, tools=[SHELL]):
            if isinstance(event, TextDelta):
                got_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(got_text.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1.0
    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 1.0)


@pytest.mark.parametrize("kind", KINDS)
async def test_cancelling_a_consumer_between_slow_chunks_closes_the_connection(
    llm: ScriptedLLM, kind: str
) -> None:
    # The consumer is cancelled while busy with an event (not inside the provider); aclosing
    # still closes the response at once instead of whenever the generator is collected.
    llm.script(Reply(text="a" * 100, chunk_size=1, chunk_delay=0.1))
    client = provider(llm, kind)
    busy = asyncio.Event()

    async def consume() -> None:
        stream = client.stream(system="", messages=HI, tools=None)
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    busy.set()
                    await asyncio.sleep(10)  # e.g. waiting on the channel layer

    task = asyncio.create_task(consume())
    await asyncio.wait_for(busy.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 1.0
    assert await asyncio.to_thread(llm.wait_for_disconnects, 1, 1.0)


def test_streams_work_from_several_event_loops(llm: ScriptedLLM) -> None:
    # Celery workers and the web process each run their own loop: no client may be shared.
    client = provider(llm, "openai")
    llm.set_default(Reply(text="ok"))
    results: list[str] = []

    def run_once() -> None:
        results.append(final(asyncio.run(collect(client))).text)

    threads = [threading.Thread(target=run_once) for _ in range(3)]
    for thread in threads:
        thread.start()
    run_once()
    for thread in threads:
        thread.join(10)
    assert results == ["ok"] * 4


def _sse(lines: list[str]) -> list[dict[str, Any]]:
    from chat_app.providers.openai_provider import sse_data

    async def source() -> Any:
        for line in lines:
            yield line

    async def collect() -> list[dict[str, Any]]:
        return [d async for d in sse_data(source())]

    return asyncio.run(collect())


def test_server_sent_events_are_decoded_per_event_up_to_done() -> None:
    lines = [
        ": a comment",
        "event: chunk",
        'data: {"a": 1}',
        "",
        'data: {"b":',  # one event's data split over two lines
        "data: 2}",
        "",
        "",
        "data:[DONE]",
        "",
        'data: {"after": "done"}',
        "",
    ]
    assert _sse(lines) == [{"a": 1}, {"b": 2}]
    assert _sse(['data: {"last": true}']) == [{"last": True}]  # no blank line at the end


def test_server_sent_events_that_are_not_protocol_raise_provider_errors() -> None:
    with pytest.raises(json.JSONDecodeError):
        _sse(["data: {{{", ""])
    with pytest.raises(ProviderError, match="malformed stream event"):
        _sse(["data: [1, 2]", ""])
    with pytest.raises(ProviderError, match="mid-reply: overloaded"):
        _sse(['data: {"error": {"message": "overloaded"}}', ""])


def test_the_openai_body_splices_each_tools_kept_json_into_the_request() -> None:
    from chat_app.providers.openai_provider import request_body, to_openai_tool

    tools = [
        ToolSpec(name="t1", description="ünïcode", parameters={"type": "object"}, strict=True),
        ToolSpec(name="t2", description="two", parameters={"type": "object", "properties": {}}),
    ]
    request = {"model": "m", "messages": [{"role": "user", "content": "hi ✓"}], "stream": True}
    expected = {**request, "tools": [to_openai_tool(t) for t in tools]}
    assert json.loads(request_body(request, tools)) == expected
    assert json.loads(request_body(request, tools)) == expected  # from the kept JSON
    assert json.loads(request_body(request, None)) == request


@pytest.mark.django_db
def test_a_runner_warms_up_the_sdks_of_the_provider_kinds_configured(monkeypatch) -> None:
    from chat_app import providers
    from chat_app.models import Provider
    from chat_app.runner import AgentRunner
    from chat_app.selectors import provider_kinds_configured

    assert provider_kinds_configured() == ["openai"]  # none yet: the default kind's
    Provider.objects.create(name="local", kind="openai", base_url="http://x/v1", model="m")
    assert provider_kinds_configured() == ["openai"]
    Provider.objects.create(name="claude", kind="anthropic", model="claude-x")
    assert provider_kinds_configured() == ["anthropic", "openai"]
    Provider.objects.filter(kind="openai").delete()
    warmed: list[str] = []
    monkeypatch.setattr(providers, "provider_class", lambda kind: warmed.append(kind))
    AgentRunner()._warm_up()
    assert warmed == ["anthropic"]
