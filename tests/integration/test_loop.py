"""The agent loop's behaviour: round limit, text fallback, detection of tool support,
both provider protocols, provider errors, malformed calls."""

from __future__ import annotations

import pytest
from django.test import override_settings

from chat_app.models import Message, Provider, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.helpers import tool_json
from tests.llm_server import Call, Reply, ScriptedLLM
from tools_app.models import ToolCall

pytestmark = [pytest.mark.modes]


def run(conversation, user, text: str) -> Turn:
    return wait_turn(turn_start(conversation=conversation, user_id=user.pk, text=text).pk)


@override_settings(AGENT_MAX_ROUNDS=3)
def test_it_stops_at_the_round_limit_with_a_clear_message(
    worker, conversation, user, llm, provider
):
    llm.set_default(Reply(calls=[Call("current_time", {"timezone": "UTC"})]))
    turn = run(conversation, user, "loop forever")
    assert turn.status == Turn.Status.LIMITED
    assert ToolCall.objects.filter(turn=turn).count() == 3
    assert len(llm.requests) == 3
    notice = Message.objects.get(turn=turn, role=Message.Role.NOTICE)
    assert "Stopped after 3 rounds" in notice.content


def test_text_fallback_runs_calls_written_as_json(worker, conversation, user, llm, provider):
    provider.native_tools = Provider.NativeTools.FALSE
    provider.save()
    llm.script(
        Reply(
            text="I will check.\n```json\n"
            '{"tool": "current_time", "arguments": {"timezone": "UTC"}}\n```'
        ),
        Reply(text="Done: it is morning."),
    )
    turn = run(conversation, user, "time please")
    assert turn.status == Turn.Status.SUCCEEDED
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "succeeded" and call.arguments == {"timezone": "UTC"}
    first, second = llm.requests
    assert "tools" not in first
    assert "current_time" in first["messages"][0]["content"]  # the tools-and-format block
    results = second["messages"][-1]
    assert results["role"] == "user" and "current_time" in results["content"]
    assert '"success": true' in results["content"]


def test_fallback_grammar_is_sent_only_in_text_fallback_when_asked(
    worker, conversation, user, llm, provider
):
    # Provider.fallback_grammar: each text-fallback request carries llama.cpp's `grammar`,
    # built from the round's tools; native rounds and providers without the option never do.
    provider.native_tools = Provider.NativeTools.FALSE
    provider.fallback_grammar = True
    provider.save()
    llm.script(
        Reply(text='```json\n{"tool": "current_time", "arguments": {"timezone": "UTC"}}\n```'),
        Reply(text="It is morning."),
    )
    turn = run(conversation, user, "time please")
    assert turn.status == Turn.Status.SUCCEEDED
    assert ToolCall.objects.get(turn=turn).status == "succeeded"
    first, second = llm.requests
    assert "tools" not in first
    assert first["grammar"].startswith("root ::= prose | ")
    assert '"\\"current_time\\""' in first["grammar"] and second["grammar"] == first["grammar"]

    provider.native_tools = Provider.NativeTools.TRUE
    provider.save()
    llm.requests.clear()
    llm.script(Reply(text="Hello."))
    run(conversation, user, "hello")
    assert "grammar" not in llm.requests[0]
    provider.native_tools = Provider.NativeTools.FALSE
    provider.fallback_grammar = False
    provider.save()
    llm.requests.clear()
    llm.script(Reply(text="Hello."))
    run(conversation, user, "hello")
    assert "grammar" not in llm.requests[0]


def test_text_fallback_reports_broken_json_to_the_model(worker, conversation, user, llm, provider):
    provider.native_tools = Provider.NativeTools.FALSE
    provider.save()
    llm.script(
        Reply(text='```json\n{"tool": "current_time", "arguments": {"timezone": "UTC"\n```'),
        Reply(text="Oops."),
    )
    turn = run(conversation, user, "time please")
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "failed"
    assert "not valid JSON" in call.error
    assert "not valid JSON" in llm.requests[1]["messages"][-1]["content"]


def test_auto_mode_detects_a_server_without_tools_once(worker, conversation, user, provider):
    with ScriptedLLM(reject_tools=True) as llm:
        provider.base_url = llm.openai_base_url
        provider.save()
        llm.script(
            Reply(text=">>> RUN COMMAND\necho hi\n<<<"),
            Reply(text="The shell tool is not there yet."),
            Reply(text="Second turn, plain text."),
        )
        turn = run(conversation, user, "say hi")
        provider.refresh_from_db()
        assert provider.tools_supported is False
        assert turn.status == Turn.Status.SUCCEEDED
        call = ToolCall.objects.get(turn=turn)
        assert call.tool == "shell_exec"  # the RUN COMMAND block targets the shell tool
        run(conversation, user, "again")
        with_tools = [r for r in llm.requests if r.get("tools")]
        assert len(with_tools) == 1  # rejected once, remembered afterwards


def test_anthropic_protocol_end_to_end(worker, conversation, user, llm, provider):
    provider.kind = Provider.Kind.ANTHROPIC
    provider.base_url = llm.anthropic_base_url
    provider.save()
    llm.script(
        Reply(
            text="Checking.",
            calls=[
                Call("current_time", {"timezone": "Europe/Rome"}),
                Call("current_time", {"timezone": "UTC"}),
            ],
        ),
        Reply(text="Rome is ahead of UTC."),
    )
    turn = run(conversation, user, "compare")
    assert turn.status == Turn.Status.SUCCEEDED
    calls = list(ToolCall.objects.filter(turn=turn).order_by("index"))
    assert [c.status for c in calls] == ["succeeded", "succeeded"]
    second = llm.requests[1]
    assert second["_path"].endswith("/v1/messages")
    results = [
        b
        for m in second["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert {r["tool_use_id"] for r in results} == {c.call_id for c in calls}


def test_an_unreachable_provider_fails_the_turn_with_clear_words(
    worker, conversation, user, provider
):
    provider.base_url = "http://127.0.0.1:9/v1"
    provider.save()
    turn = run(conversation, user, "hello")
    assert turn.status == Turn.Status.FAILED
    notice = Message.objects.get(turn=turn, role=Message.Role.NOTICE)
    assert "cannot reach the LLM" in notice.content


def test_malformed_native_arguments_become_an_error_result(
    worker, conversation, user, llm, provider
):
    llm.script(
        Reply(calls=[Call("current_time", '{"timezone": "UTC"')]),
        Reply(text="I will fix my call."),
    )
    turn = run(conversation, user, "time")
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "failed"
    assert "not valid JSON" in call.error
    tool_msg = next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")
    assert tool_json(tool_msg["content"]) == {"success": False, "error": call.error}


def test_the_model_is_not_sent_how_long_a_call_took(worker, conversation, user, llm, provider):
    # The card and the audit keep the duration; the model's copy of the result leaves it out
    # (it differs from run to run, so the same conversation would be another request each time).
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="Noon."))
    turn = run(conversation, user, "time")
    call = ToolCall.objects.get(turn=turn)
    assert call.status == "succeeded" and "duration_ms" in call.result
    sent = tool_json(next(m for m in llm.requests[1]["messages"] if m["role"] == "tool")["content"])
    assert sent["success"] is True and sent["timezone"] == "UTC"
    assert sent == {k: v for k, v in call.result.items() if k != "duration_ms"}
