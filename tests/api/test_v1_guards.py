"""The guards on /v1 (issue 36): the governed loop an OpenAI client starts reads a tool result
whose AWS key was redacted (so neither its model nor the client's answer holds it), and a
call whose arguments carry a GitHub token waits for the token's person."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.api.test_v1_openai import ask, client
from tests.helpers import wait_for
from tests.httpserver import HttpServer, serving
from tests.llm_server import Call, Reply
from tests.tools.conftest import configure
from tools_app.models import ToolCall
from tools_app.services.approval import toolcall_decide

PAGES = "127.0.0.67"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"


@pytest.fixture
def pages() -> Iterator[HttpServer]:
    def key(hit: Any) -> Any:
        return 200, [("Content-Type", "text/plain")], f"aws_access_key_id={AWS}".encode()

    with serving(PAGES, {"/key": key}) as server:
        configure("http", private_allowed=[PAGES])
        yield server


def _tool_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "tool")


@pytest.mark.modes
def test_a_v1_turn_reads_the_key_redacted(
    api_server: str, llm: Any, provider: Any, raw_token: str, pages: HttpServer
) -> None:
    llm.script(
        Reply(calls=[Call("http_request", {"url": pages.url("/key")})]),
        Reply(text="I read the page."),
    )
    reply = client(api_server, raw_token).chat.completions.create(
        model="General", messages=ask("Read the key page")
    )
    assert reply.choices[0].message.content.endswith("I read the page.")
    seen = _tool_text(llm.requests[1])
    assert "[REDACTED:AWS Access Key]" in seen and AWS not in seen
    assert AWS not in json.dumps(reply.model_dump())


@pytest.mark.modes
def test_a_v1_call_carrying_a_token_waits_for_its_person(
    api_server: str, llm: Any, provider: Any, user: Any, raw_token: str, pages: HttpServer
) -> None:
    arguments = {"url": pages.url("/key"), "method": "POST", "body": f"t={GITHUB}"}
    llm.script(Reply(calls=[Call("http_request", arguments)]), Reply(text="Not sent."))
    answer: dict[str, Any] = {}

    def ask_it() -> None:
        answer["reply"] = client(api_server, raw_token).chat.completions.create(
            model="General", messages=ask("Post my token")
        )

    thread = threading.Thread(target=ask_it)
    thread.start()
    waiting = wait_for(
        lambda: ToolCall.objects.filter(source="api", status="awaiting_approval").first(),
        timeout=30,
        message="the /v1 call to wait",
    )
    assert waiting.policy_reason == "the arguments carry GitHub Token (arguments.body)"
    assert waiting.approval_mode == "requester" and pages.hits == []
    toolcall_decide(user=user, call_id=waiting.pk, approve=False, note="never")
    thread.join(30)
    assert answer["reply"].choices[0].message.content.endswith("Not sent.")
    assert pages.hits == []
