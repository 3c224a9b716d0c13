"""The scripted LLM server, checked against the official SDKs with strict response validation
(so a missing or mistyped field fails here) and against the raw wire."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from tests.llm_server import Call, Reply, ScriptedLLM

USER = [{"role": "user", "content": "hi"}]
SHELL_TOOL = {
    "type": "function",
    "function": {
        "name": "shell_exec",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
    },
}
ANTHROPIC_SHELL_TOOL = {
    "name": "shell_exec",
    "description": "Run a command.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def openai_client(llm: ScriptedLLM, api_key: str = "sk-test") -> openai.OpenAI:
    return openai.OpenAI(
        base_url=llm.openai_base_url,
        api_key=api_key,
        max_retries=0,
        timeout=10,
        _strict_response_validation=True,
    )


def anthropic_client(llm: ScriptedLLM, api_key: str = "sk-ant-test") -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=llm.anthropic_base_url,
        api_key=api_key,
        max_retries=0,
        timeout=10,
        _strict_response_validation=True,
    )


def raw_post(llm: ScriptedLLM, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], str]:
    conn = http.client.HTTPConnection("127.0.0.1", llm.port, timeout=10)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode()
    finally:
        conn.close()


def sse_data(raw: str) -> list[str]:
    return [line[len("data: ") :] for line in raw.split("\n") if line.startswith("data: ")]


# --- OpenAI ---------------------------------------------------------------------------------


def test_it_streams_openai_text_that_the_sdk_validates(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="Hello, wörld! How are you today?", chunk_size=5))
    with openai_client(llm) as client:
        chunks = list(
            client.chat.completions.create(
                model="m", messages=USER, stream=True, stream_options={"include_usage": True}
            )
        )
    content = [c.choices[0].delta.content for c in chunks if c.choices]
    assert "".join(filter(None, content)) == "Hello, wörld! How are you today?"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0
    assert all(c.object == "chat.completion.chunk" and c.model == "m" for c in chunks)


def test_it_interleaves_parallel_tool_call_deltas(llm: ScriptedLLM) -> None:
    llm.script(
        Reply(
            calls=[
                Call("shell_exec", {"command": "ls -la /workspace"}),
                Call("file_read", {"path": "README.md"}),
            ],
            chunk_size=4,
        )
    )
    with openai_client(llm) as client:
        stream = client.chat.completions.create(
            model="m", messages=USER, tools=[SHELL_TOOL], stream=True
        )
        deltas = [tc for chunk in stream for tc in chunk.choices[0].delta.tool_calls or []]
    order = [d.index for d in deltas]
    assert order[:4] == [0, 1, 0, 1]  # round-robin, not one call after the other
    for index, name, arguments in [
        (0, "shell_exec", {"command": "ls -la /workspace"}),
        (1, "file_read", {"path": "README.md"}),
    ]:
        mine = [d for d in deltas if d.index == index]
        assert mine[0].id and mine[0].type == "function" and mine[0].function.name == name
        assert all(d.id is None and d.function.name is None for d in mine[1:])
        assert json.loads("".join(d.function.arguments or "" for d in mine)) == arguments


def test_it_streams_calls_one_after_another_without_interleave(llm: ScriptedLLM) -> None:
    llm.script(Reply(calls=[Call("a", {"x": "1234567890"}), Call("b", {})], interleave=False))
    with openai_client(llm) as client:
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        order = [tc.index for c in stream for tc in c.choices[0].delta.tool_calls or []]
    assert order == sorted(order)


def test_it_passes_broken_json_arguments_through_raw(llm: ScriptedLLM) -> None:
    llm.script(Reply(calls=[Call("shell_exec", '{"command": "ls')]))
    with openai_client(llm) as client:
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        chunks = list(stream)
    arguments = "".join(
        tc.function.arguments or ""
        for c in chunks
        for tc in c.choices[0].delta.tool_calls or []
        if tc.function
    )
    assert arguments == '{"command": "ls'
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_the_sdk_stream_helper_assembles_the_reply(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="Let me look.", calls=[Call("shell_exec", {"command": "pwd"}, id="c1")]))
    with (
        openai_client(llm) as client,
        client.chat.completions.stream(model="m", messages=USER, tools=[SHELL_TOOL]) as stream,
    ):
        completion = stream.get_final_completion()
    message = completion.choices[0].message
    assert message.content == "Let me look."
    [call] = message.tool_calls or []
    assert (call.id, call.function.name, call.function.arguments) == (
        "c1",
        "shell_exec",
        '{"command": "pwd"}',
    )


def test_it_answers_a_non_streaming_completion(llm: ScriptedLLM) -> None:
    llm.script(Reply(text='{"title": "Greeting"}'), Reply(calls=[Call("time_now")]))
    with openai_client(llm) as client:
        completion = client.chat.completions.create(
            model="m",
            messages=USER,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "t", "schema": {"type": "object"}},
            },
        )
        with_call = client.chat.completions.create(model="m", messages=USER)
    assert completion.object == "chat.completion"
    assert json.loads(completion.choices[0].message.content or "") == {"title": "Greeting"}
    assert completion.choices[0].finish_reason == "stop"
    assert with_call.choices[0].message.content is None
    assert with_call.choices[0].message.tool_calls[0].function.name == "time_now"
    assert with_call.choices[0].finish_reason == "tool_calls"


def test_it_lists_the_model(llm: ScriptedLLM) -> None:
    with openai_client(llm) as client:
        assert [m.id for m in client.models.list()] == ["scripted-model"]


def test_it_sends_proper_sse_on_the_wire(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="hi"))
    status, headers, raw = raw_post(
        llm, "/v1/chat/completions", {"model": "m", "messages": USER, "stream": True}
    )
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    data = sse_data(raw)
    assert data[-1] == "[DONE]"
    assert json.loads(data[0])["choices"][0]["delta"]["role"] == "assistant"
    assert "usage" not in json.loads(data[0])  # only when stream_options asks for it


# --- Anthropic ------------------------------------------------------------------------------


def test_it_streams_anthropic_blocks_that_the_sdk_accumulates(llm: ScriptedLLM) -> None:
    llm.script(
        Reply(
            text="I will run two commands.",
            calls=[Call("shell_exec", {"command": "ls"}), Call("shell_exec", {"command": "pwd"})],
            chunk_size=3,
        )
    )
    with (
        anthropic_client(llm) as client,
        client.messages.stream(
            model="claude-x", max_tokens=100, messages=USER, tools=[ANTHROPIC_SHELL_TOOL]
        ) as stream,
    ):
        text = "".join(stream.text_stream)
        message = stream.get_final_message()
    assert text == "I will run two commands."
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert [block.input for block in message.content[1:]] == [
        {"command": "ls"},
        {"command": "pwd"},
    ]
    assert message.stop_reason == "tool_use"
    assert message.model == "claude-x"
    assert message.usage.output_tokens > 0


def test_it_names_every_anthropic_event_after_its_type(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="ok", calls=[Call("t", {"a": 1})]))
    body = {"model": "c", "max_tokens": 10, "messages": USER, "stream": True}
    status, _, raw = raw_post(llm, "/v1/messages", body)
    assert status == 200
    frames = [f for f in raw.split("\n\n") if f.strip()]
    kinds = []
    for frame in frames:
        event_line, data_line = frame.split("\n")
        kind = event_line.removeprefix("event: ")
        assert json.loads(data_line.removeprefix("data: "))["type"] == kind
        kinds.append(kind)
    assert kinds[:3] == ["message_start", "ping", "content_block_start"]
    assert kinds[-2:] == ["message_delta", "message_stop"]


def test_it_answers_a_forced_anthropic_tool_with_the_scripted_json(llm: ScriptedLLM) -> None:
    llm.script(Reply(text='{"title": "Hi"}'), Reply(text="not json"))
    with anthropic_client(llm) as client:
        kwargs: dict[str, Any] = {
            "model": "c",
            "max_tokens": 100,
            "messages": USER,
            "tools": [{"name": "answer", "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "tool", "name": "answer"},
        }
        forced = client.messages.create(**kwargs)
        ignored = client.messages.create(**kwargs)
    [block] = forced.content
    assert block.type == "tool_use" and block.name == "answer" and block.input == {"title": "Hi"}
    assert forced.stop_reason == "tool_use"
    assert [b.type for b in ignored.content] == ["text"]


def test_it_answers_a_non_streaming_anthropic_message_with_calls(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="Sure.", calls=[Call("t", '{"a": 1}')]))
    with anthropic_client(llm) as client:
        message = client.messages.create(model="c", max_tokens=10, messages=USER)
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"a": 1}


# --- errors, refusals, auth -----------------------------------------------------------------


def test_it_returns_a_scripted_error_status_and_body(llm: ScriptedLLM) -> None:
    body = {"error": {"message": "model overloaded", "type": "server_error"}}
    llm.script(
        Reply(error=(503, body)), Reply(error=(529, {"type": "error", "error": body["error"]}))
    )
    with openai_client(llm) as client, pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == 503
    assert caught.value.body == body["error"]
    with anthropic_client(llm) as client, pytest.raises(anthropic.APIStatusError) as caught2:
        client.messages.create(model="c", max_tokens=10, messages=USER, stream=True)
    assert caught2.value.status_code == 529


def test_it_sends_an_error_inside_the_stream(llm: ScriptedLLM) -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    llm.script(Reply(text="Hi", stream_error=overloaded), Reply(text="Hi", stream_error=overloaded))
    with openai_client(llm) as client, pytest.raises(openai.APIError, match="Overloaded"):
        list(client.chat.completions.create(model="m", messages=USER, stream=True))
    with (
        anthropic_client(llm) as client,
        pytest.raises(anthropic.APIStatusError, match="Overloaded"),
        client.messages.stream(model="c", max_tokens=5, messages=USER) as stream,
    ):
        stream.until_done()


def test_it_rejects_tools_like_ollama_when_asked(llm: ScriptedLLM) -> None:
    llm.reject_tools = True
    with openai_client(llm) as client:
        with pytest.raises(openai.BadRequestError, match="does not support tools"):
            client.chat.completions.create(model="m", messages=USER, tools=[SHELL_TOOL])
        plain = client.chat.completions.create(model="m", messages=USER)
    assert plain.choices[0].message.content == "(no scripted reply)"
    with anthropic_client(llm) as client, pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model="c", max_tokens=10, messages=USER, tools=[ANTHROPIC_SHELL_TOOL]
        )


def test_it_checks_the_api_key_when_configured() -> None:
    with ScriptedLLM(api_key="right") as llm:
        with pytest.raises(openai.AuthenticationError):
            openai_client(llm, api_key="wrong").models.list()
        with pytest.raises(openai.AuthenticationError):
            openai_client(llm, api_key="wrong").chat.completions.create(model="m", messages=USER)
        assert openai_client(llm, api_key="right").chat.completions.create(model="m", messages=USER)
        with pytest.raises(anthropic.AuthenticationError):
            anthropic_client(llm, api_key="wrong").messages.create(
                model="c", max_tokens=5, messages=USER
            )
        assert anthropic_client(llm, api_key="right").messages.create(
            model="c", max_tokens=5, messages=USER
        )


def test_it_answers_unknown_routes_with_404(llm: ScriptedLLM) -> None:
    status, _, raw = raw_post(llm, "/v1/audio/speech", {"input": "x"})
    assert status == 404
    assert "no route" in json.loads(raw)["error"]["message"]


# --- embeddings -----------------------------------------------------------------------------


def test_embeddings_speak_the_openai_wire_format(llm: ScriptedLLM) -> None:
    from tests.llm_server import embedding_vector

    with openai_client(llm) as client:
        floats = client.embeddings.create(
            model="e", input=["red apple", "apple red", "blue sky"], encoding_format="float"
        )
    # Without encoding_format the SDK asks for base64 and decodes it (after validation, so not
    # with _strict_response_validation, which would reject the string as the real API's too).
    with openai.OpenAI(base_url=llm.openai_base_url, api_key="k", max_retries=0) as plain:
        packed = plain.embeddings.create(model="e", input="red apple")
    assert [d.index for d in floats.data] == [0, 1, 2]
    vectors = [d.embedding for d in floats.data]
    assert vectors[0] == vectors[1] == embedding_vector("red apple", 64)
    assert vectors[0] != vectors[2] and len(vectors[2]) == 64
    assert packed.data[0].embedding == vectors[0]
    assert floats.model == "e" and floats.usage.total_tokens == 6
    assert [r["_path"] for r in llm.requests] == ["/v1/embeddings", "/v1/embeddings"]
    assert [r["encoding_format"] for r in llm.requests] == ["float", "base64"]


def test_embeddings_refuse_bad_input_and_keys(llm: ScriptedLLM) -> None:
    status, _, raw = raw_post(llm, "/v1/embeddings", {"model": "e", "input": [1, 2]})
    assert status == 400 and "'input' must be" in json.loads(raw)["error"]["message"]
    llm.api_key = "right"
    status, _, _ = raw_post(llm, "/v1/embeddings", {"model": "e", "input": "x"})
    assert status == 401


# --- scripting ------------------------------------------------------------------------------


def test_it_records_requests_and_feeds_them_to_callable_replies(llm: ScriptedLLM) -> None:
    llm.script(lambda body: Reply(text=f"{len(body['messages'])} messages at {body['_path']}"))
    llm.set_default(Reply(text="default"))
    with openai_client(llm) as client:
        first = client.chat.completions.create(model="m", messages=USER * 3)
        second = client.chat.completions.create(model="m", messages=USER)
    assert first.choices[0].message.content == "3 messages at /v1/chat/completions"
    assert second.choices[0].message.content == "default"
    assert [r["_path"] for r in llm.requests] == ["/v1/chat/completions"] * 2
    assert llm.requests[0]["messages"] == USER * 3


def test_it_answers_500_when_a_callable_reply_raises(llm: ScriptedLLM) -> None:
    llm.script(lambda body: Reply(text=body["no such key"]))
    with openai_client(llm) as client, pytest.raises(openai.InternalServerError, match="KeyError"):
        client.chat.completions.create(model="m", messages=USER)
    assert [type(e) for e in llm.errors] == [KeyError]


def test_it_uses_a_placeholder_reply_when_nothing_is_scripted(llm: ScriptedLLM) -> None:
    with anthropic_client(llm) as client:
        message = client.messages.create(model="c", max_tokens=5, messages=USER)
    assert message.content[0].text == "(no scripted reply)"


def test_it_waits_chunk_delay_between_events(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="abcdef", chunk_size=1, chunk_delay=0.05))
    started = time.monotonic()
    with openai_client(llm) as client:
        list(client.chat.completions.create(model="m", messages=USER, stream=True))
    # role chunk + 6 text chunks + finish + [DONE] = 8 pauses
    assert time.monotonic() - started >= 0.35


def test_it_counts_a_client_that_leaves_a_hanging_stream(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="partial", hang_after_text=True))
    with openai_client(llm) as client:
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        received = ""
        for chunk in stream:
            received += chunk.choices[0].delta.content or ""
            if received == "partial":
                break
        stream.close()
    assert llm.wait_for_disconnects(1, timeout=2)
    assert llm.disconnects == 1


def test_it_counts_a_client_that_leaves_between_delayed_chunks(llm: ScriptedLLM) -> None:
    llm.script(Reply(text="x" * 50, chunk_size=1, chunk_delay=0.2))
    sock = socket.create_connection(("127.0.0.1", llm.port))
    body = json.dumps({"model": "c", "max_tokens": 5, "messages": USER, "stream": True})
    sock.sendall(
        f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}".encode()
    )
    assert sock.recv(100).startswith(b"HTTP/1.1 200")
    sock.close()
    assert llm.wait_for_disconnects(1, timeout=2)


def test_it_stops_promptly_while_a_stream_hangs() -> None:
    llm = ScriptedLLM().start()
    llm.script(Reply(text="waiting", hang_after_text=True))
    client = openai_client(llm)
    got_text = threading.Event()
    outcome: list[BaseException | None] = []

    def consume() -> None:
        try:
            for chunk in client.chat.completions.create(model="m", messages=USER, stream=True):
                if chunk.choices and chunk.choices[0].delta.content:
                    got_text.set()
            outcome.append(None)
        except Exception as exc:
            outcome.append(exc)

    reader = threading.Thread(target=consume)
    reader.start()
    assert got_text.wait(5)
    started = time.monotonic()
    llm.stop()
    reader.join(5)
    assert time.monotonic() - started < 2
    # The stream was cut before its end: the SDK reports a broken connection.
    assert outcome and isinstance(outcome[0], openai.APIConnectionError)
    assert llm.disconnects == 0  # the server left, not the client


@pytest.mark.parametrize("keep_alive", [False, True])
def test_keep_alive_streams_leave_the_connection_for_the_next_request(keep_alive: bool) -> None:
    with ScriptedLLM(keep_alive=keep_alive) as server:
        server.set_default(Reply(text="hello"))
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        body = json.dumps({"model": "m", "messages": USER, "stream": True})
        headers = {"Content-Type": "application/json"}
        conn.request("POST", "/v1/chat/completions", body, headers)
        first = conn.getresponse()
        assert b"[DONE]" in first.read()
        assert (first.getheader("Connection") == "close") is not keep_alive
        sock = conn.sock
        conn.request("POST", "/v1/chat/completions", body, headers)  # reopens when closed
        assert b"[DONE]" in conn.getresponse().read()
        assert (conn.sock is sock and sock is not None) is keep_alive
        conn.close()
