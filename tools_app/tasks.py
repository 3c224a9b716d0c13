from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready


@shared_task(name="tools_app.tasks.run_tool_call", ignore_result=True)
def run_tool_call(tool_call_id: int) -> None:
    from tools_app.services.execution import toolcall_execute

    toolcall_execute(tool_call_id=tool_call_id)


@worker_ready.connect(weak=False, dispatch_uid="cc-maintenance")
def _start_maintenance(**_: object) -> None:
    """Every worker process looks for lost work too (see controlcenter.maintenance)."""
    from controlcenter.maintenance import start_maintenance_thread

    start_maintenance_thread()
