"""Tool arguments nested beyond a sane depth (issue 33, finding 7) fail at binding with words
that say so — not an internal error with a traceback in the log."""

from __future__ import annotations

from tools_app.models import ToolCall
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind


def test_it_fails_a_call_whose_arguments_are_nested_too_deep(user, conversation, caplog):
    for deep in ('{"timezone": ' + "[" * 300_000, '{"timezone": ' + "[" * 200 + "]" * 200 + "}"):
        call = toolcall_bind(
            request=CallRequest(tool="current_time", arguments=deep),
            ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
        )
        assert call.status == ToolCall.Status.FAILED
        assert call.error == "arguments for current_time: JSON nested deeper than 64 levels"
    assert "Traceback" not in caplog.text and "RecursionError" not in caplog.text
