"""Tracing in one process (embedded mode): off, nothing is made; on, a turn with a tool call
is one trace rooted at the turn, and a refused call is a span of its own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chat_app.models import Turn
from chat_app.services.turns import turn_start
from infra import tracing
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply

pytestmark = [pytest.mark.embedded_only]


@pytest.fixture
def spans() -> Iterator[Any]:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    assert tracing.tracing_start("web", exporter=exporter)
    try:
        yield exporter
    finally:
        tracing.tracing_stop()


def test_off_by_default_a_turn_carries_no_trace(worker, conversation, user, llm, provider):
    assert not tracing.enabled()
    llm.script(Reply(text="Hi."))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hi").pk)
    assert turn.trace_context == ""


def test_a_turn_is_one_trace_and_a_refused_call_is_a_span(
    worker, conversation, user, llm, provider, spans
):
    llm.script(
        Reply(
            calls=[
                Call("current_time", {"timezone": "UTC"}),
                Call("no_such_tool", {}),
            ]
        ),
        Reply(text="Done."),
    )
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="go").pk)
    assert turn.status == Turn.Status.SUCCEEDED
    trace_id = int(turn.trace_context.split("-")[1], 16)
    expected = [
        "model round",
        "model round",
        "tool current_time",
        "tool no_such_tool",
        "turn",
        "turn start",
    ]

    def finished() -> list[Any]:
        # The last round's span ends just after its completion has ended the turn (the
        # round's ``finally``), so the turn's status can be seen a moment before that span.
        tracing.tracing_flush()
        return [s for s in spans.get_finished_spans() if s.context.trace_id == trace_id]

    wait_for(lambda: len(finished()) >= len(expected), timeout=5, message="the turn's spans to end")
    mine = finished()
    names = sorted(s.name for s in mine)
    assert names == expected
    ids = {s.context.span_id for s in mine}
    roots = [s for s in mine if s.parent is None]
    assert [r.name for r in roots] == ["turn"]
    assert all(s.parent.span_id in ids for s in mine if s.parent is not None)
    refused = next(s for s in mine if s.name == "tool no_such_tool")
    assert refused.attributes["cc.tool.status"] == "failed"
    assert not refused.status.is_ok
    turn_span = roots[0]
    assert turn_span.start_time <= min(s.start_time for s in mine)
    assert turn_span.attributes["cc.turn.tool_rounds"] == 1
