"""The guards on /mcp/ (issue 36): an MCP client with a personal token reads a result whose
AWS key was redacted before it was stored, and a call whose arguments carry a GitHub token
waits for its person (then runs once they approve), like every other way in."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from platform_app.api_tokens import api_token_create
from tests.helpers import wait_for
from tests.httpserver import HttpServer, serving
from tests.tools.conftest import configure
from tests.tools.mcp.test_mcp_endpoint import call
from tools_app.models import ToolCall
from tools_app.services.approval import toolcall_decide

pytestmark = [pytest.mark.modes]

PAGES = "127.0.0.66"
AWS = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "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"


@pytest.fixture
def pages() -> Iterator[HttpServer]:
    def key(hit: Any) -> Any:
        return 200, [("Content-Type", "text/plain")], f"aws_access_key_id={AWS}".encode()

    def plain(hit: Any) -> Any:
        return 200, [("Content-Type", "text/plain")], b"received"

    with serving(PAGES, {"/key": key, ("POST", "/plain"): plain, "/plain": plain}) as server:
        configure("http", private_allowed=[PAGES])
        yield server


def test_an_mcp_client_reads_the_key_redacted(
    app_server: str, user: Any, worker: str, pages: HttpServer
) -> None:
    token = api_token_create(user=user, name="laptop")[1]
    result = call(app_server, token, "http_request", {"url": pages.url("/key")})
    assert not result.is_error, result.content
    text = str(result.structured_content) + "".join(getattr(c, "text", "") for c in result.content)
    assert "[REDACTED:AWS Access Key]" in text and AWS not in text


def test_an_mcp_call_carrying_a_token_waits_for_its_person(
    app_server: str, user: Any, worker: str, pages: HttpServer
) -> None:
    token = api_token_create(user=user, name="laptop")[1]
    arguments = {"url": pages.url("/plain"), "method": "POST", "body": f"t={GITHUB}"}
    answer: dict[str, Any] = {}

    def client() -> None:
        answer["value"] = call(app_server, token, "http_request", arguments)

    thread = threading.Thread(target=client)
    thread.start()
    waiting = wait_for(
        lambda: ToolCall.objects.filter(source="mcp", status="awaiting_approval").first(),
        timeout=20,
        message="the MCP call to wait",
    )
    assert waiting.policy_reason == "the arguments carry GitHub Token (arguments.body)"
    assert pages.hits == []
    toolcall_decide(user=user, call_id=waiting.pk, approve=True)
    thread.join(30)
    assert not answer["value"].is_error, answer["value"].content
    assert [h.body for h in pages.hits] == [f"t={GITHUB}".encode()]  # as its person allowed
