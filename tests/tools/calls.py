"""Calling a tool the way the platform-tool tests do: bind (schema + policy) and, when the
call may run, execute it in this process (watchdog + activity). The database is the mode's
own (SQLite embedded, PostgreSQL distributed), so full-text search is tested in both."""

from __future__ import annotations

from typing import Any

from tools_app.models import ToolCall
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_execute


def run_tool(
    tool: str,
    /,
    *,
    user: Any,
    conversation_id: int | None = None,
    call_source: str = "api",
    **args: Any,
) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=args),
        ctx=BindContext(
            user_id=user.pk if user is not None else None,
            conversation_id=conversation_id,
            source=call_source,
        ),
    )
    if call.status == ToolCall.Status.QUEUED:
        toolcall_execute(tool_call_id=call.pk)
        call.refresh_from_db()
    return call


def ok(call: ToolCall) -> dict[str, Any]:
    """The result of a call that must have succeeded."""
    assert call.status == ToolCall.Status.SUCCEEDED, (call.status, call.error, call.result)
    assert call.result is not None and call.result["success"] is True
    return call.result
