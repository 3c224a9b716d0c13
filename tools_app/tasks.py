from __future__ import annotations

from celery import shared_task


@shared_task(name="tools_app.tasks.run_tool_call", ignore_result=True)
def run_tool_call(tool_call_id: int) -> None:
    from tools_app.services.execution import toolcall_execute

    toolcall_execute(tool_call_id=tool_call_id)
