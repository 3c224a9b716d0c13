"""Tool results go back to the model with their non-ASCII text as it is (Cyrillic, CJK), not
as ``\\uXXXX`` escapes that cost several tokens a letter: over the OpenAI and Anthropic wire
protocols and in the text fallback."""

from __future__ import annotations

from typing import Any

import pytest

from chat_app.models import Provider, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

pytestmark = [pytest.mark.modes]

VALUE = "Москва, 東京"
CALL = {"section": "user", "key": "город", "value": VALUE}


def _tool_texts(request: dict[str, Any]) -> list[str]:
    """What the model reads as tool results in one request, whatever the protocol."""
    texts = []
    for message in request["messages"]:
        content = message.get("content")
        if message.get("role") == "tool":
            texts.append(str(content))
        elif isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    inner = block.get("content")
                    texts.append(
                        inner if isinstance(inner, str) else " ".join(b["text"] for b in inner)
                    )
        elif message.get("role") == "user" and "Results of your tool calls" in str(content):
            texts.append(str(content))
    return texts


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "fallback"])
def test_it_sends_cyrillic_and_cjk_results_to_the_model_unescaped(
    worker, conversation, user, llm, provider, protocol
):
    if protocol == "anthropic":
        provider.kind = Provider.Kind.ANTHROPIC
        provider.base_url = llm.anthropic_base_url
    if protocol == "fallback":
        provider.native_tools = Provider.NativeTools.FALSE
        first = Reply(
            text='```json\n{"tool": "memory_core_update", "arguments": ' + _json() + "}\n```"
        )
    else:
        first = Reply(calls=[Call("memory_core_update", CALL)])
    provider.save()
    llm.script(first, Reply(text="Запомнил."))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="запомни").pk)
    assert turn.status == Turn.Status.SUCCEEDED
    assert ToolCall.objects.get(turn=turn).status == "succeeded"
    texts = _tool_texts(llm.requests[1])
    assert texts, llm.requests[1]["messages"]
    assert any(VALUE in text and "город" in text for text in texts)
    assert not any("\\u" in text for text in texts)


def _json() -> str:
    import json

    return json.dumps(CALL, ensure_ascii=False)
