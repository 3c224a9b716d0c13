"""A webhook that answers with a redirect has not received the text (issue 20, finding 9):
redirects are not followed for webhooks, so only a 2xx counts as delivered. A real server
on a loopback address answers 302."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure
from tests.tools.research.servers import Hit, Response, Server, serving
from tools_app.models import ToolCall

HOST = "127.0.0.34"


def _moved(hit: Hit, server: Server) -> Response:
    return 302, [("Location", server.url("/elsewhere"))], b""


def _accepted(hit: Hit, server: Server) -> Response:
    return 202, [], b""


@pytest.fixture
def hooks() -> Iterator[Server]:
    routes = {
        ("POST", "/moved"): _moved,
        ("POST", "/accepted"): _accepted,
        ("POST", "/elsewhere"): _accepted,
    }
    with serving(HOST, routes) as server:
        yield server


def test_a_webhook_answering_a_redirect_is_not_delivered(user: Any, hooks: Server) -> None:
    configure("messaging", webhooks=[f"team={hooks.url('/moved')}"], private_allowed=[HOST])

    call = run_tool("send_message", user=user, channel="webhook", chat_id="team", text="Hi")

    assert call.status == ToolCall.Status.FAILED, call.result
    assert call.error == (
        "webhook 'team' answered HTTP 302: a redirect, which webhooks do not follow; not delivered"
    )
    assert "elsewhere" not in str(call.result)
    assert "delivered" not in call.result
    assert hooks.paths() == ["/moved"]  # the redirect was not followed


def test_any_2xx_is_delivered(user: Any, hooks: Server) -> None:
    configure("messaging", webhooks=[f"team={hooks.url('/accepted')}"], private_allowed=[HOST])

    result = ok(run_tool("send_message", user=user, channel="webhook", chat_id="team", text="Hi"))

    assert result["delivered"] is True and result["status"] == 202
