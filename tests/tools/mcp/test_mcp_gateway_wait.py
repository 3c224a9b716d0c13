"""How /mcp/ waits for a call: woken by the call's events on the channel layer (in-memory in
embedded mode, Redis in distributed mode), not by reading its row every few milliseconds; a
slow poll of the row still answers when the events never come; a client that gives up
cancels the call."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from platform_app import mcp_gateway
from platform_app.api_tokens import api_token_create
from tests.helpers import wait_for
from tests.tools.mcp.test_mcp_endpoint import _with_session
from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.services.approval import toolcall_decide

pytestmark = [pytest.mark.modes]


@pytest.fixture
def status_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The gateway's reads of a call's status, counted."""
    reads: list[int] = []
    real = mcp_gateway._status

    def counted(call_id: int) -> str:
        reads.append(call_id)
        return real(call_id)

    monkeypatch.setattr(mcp_gateway, "_status", counted)
    return reads


def _awaiting_approval(user: Any) -> ToolCall:
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    token = api_token_create(user=user, name="wait test")[0]
    call = mcp_gateway._bind(token.pk, "current_time", {"timezone": "UTC"})
    assert call.status == ToolCall.Status.AWAITING_APPROVAL
    return call


def _approve_after(seconds: float, user: Any, call_id: int) -> threading.Thread:
    def approve() -> None:
        time.sleep(seconds)
        toolcall_decide(user=user, call_id=call_id, approve=True)

    thread = threading.Thread(target=approve)
    thread.start()
    return thread


def test_it_wakes_on_the_calls_finish_instead_of_polling_its_row(
    user: Any, worker: str, status_reads: list[int]
) -> None:
    assert not hasattr(mcp_gateway, "POLL_SECONDS")
    assert mcp_gateway.FALLBACK_POLL_SECONDS >= 1
    call = _awaiting_approval(user)
    thread = _approve_after(1.0, user, call.pk)  # a call that takes a second or more
    done = asyncio.run(mcp_gateway.call_finished(call.pk))
    thread.join(10)
    assert done.status == ToolCall.Status.SUCCEEDED, done.result
    assert done.result["timezone"] == "UTC"
    # Polling every 50 ms read the row 20 times a second; now: once after subscribing, and
    # again only if no event came for FALLBACK_POLL_SECONDS (a slow machine).
    assert len(status_reads) <= 3, status_reads


def test_a_slow_poll_still_answers_when_no_event_comes(
    user: Any, worker: str, status_reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra import events  # where the call's listener finds its layer

    monkeypatch.setattr(events, "get_channel_layer", lambda: None)
    monkeypatch.setattr(mcp_gateway, "FALLBACK_POLL_SECONDS", 0.1)
    call = _awaiting_approval(user)
    thread = _approve_after(0.3, user, call.pk)
    done = asyncio.run(mcp_gateway.call_finished(call.pk))
    thread.join(10)
    assert done.status == ToolCall.Status.SUCCEEDED, done.result
    assert len(status_reads) >= 2


def test_a_client_that_gives_up_cancels_the_call(app_server: str, user: Any, worker: str) -> None:
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    raw = api_token_create(user=user, name="impatient")[1]

    def waiting() -> ToolCall | None:
        return ToolCall.objects.filter(
            source="mcp", tool="current_time", status=ToolCall.Status.AWAITING_APPROVAL
        ).first()

    async def work(session: Any) -> None:
        calling = asyncio.ensure_future(session.call_tool("current_time", {"timezone": "UTC"}))
        while not await asyncio.to_thread(waiting):
            await asyncio.sleep(0.05)
        calling.cancel()  # the client stops waiting: the SDK tells the server
        with pytest.raises(asyncio.CancelledError):
            await calling

    asyncio.run(_with_session(app_server, raw, work))
    cancelled = wait_for(
        lambda: ToolCall.objects.filter(
            source="mcp", tool="current_time", status=ToolCall.Status.CANCELLED
        ).first(),
        timeout=20,
        message="the abandoned MCP call to be cancelled",
    )
    assert cancelled.error == "cancelled by the MCP client"


def test_a_client_that_gives_up_while_its_call_is_stored_still_cancels_it(
    user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race behind a flaky run: the client saw the stored call and gave up before the
    gateway's coroutine had its row back from the bind. The cancel lands in that gap here on
    purpose (a bind slow to return), and the call still ends cancelled, not waiting for an
    approver forever."""
    ToolFunctionConfig.objects.create(name="current_time", approval_mode="requester")
    token = api_token_create(user=user, name="impatient")[0]
    stored = threading.Event()
    real = mcp_gateway._bind

    def slow_to_return(*args: Any) -> Any:
        call = real(*args)
        stored.set()
        time.sleep(0.5)  # the row is committed; the coroutine does not have it yet
        return call

    monkeypatch.setattr(mcp_gateway, "_bind", slow_to_return)

    async def give_up() -> None:
        calling = asyncio.ensure_future(
            mcp_gateway.call_run(token.pk, "current_time", {"timezone": "UTC"})
        )
        while not stored.is_set():
            await asyncio.sleep(0.01)
        calling.cancel()
        with pytest.raises(asyncio.CancelledError):
            await calling

    asyncio.run(give_up())
    call = ToolCall.objects.get(source="mcp", tool="current_time")
    assert call.status == ToolCall.Status.CANCELLED, call.status
