from __future__ import annotations

import contextlib
import threading
from typing import Any

from celery import shared_task
from celery.signals import worker_init, worker_process_shutdown, worker_ready, worker_shutdown


@shared_task(name="tools_app.tasks.run_tool_call", ignore_result=True, bind=True)
def run_tool_call(self: Any, tool_call_id: int) -> None:
    from tools_app.services.execution import toolcall_execute

    # The span of whoever bound the call (a model round, a slash command), when traced.
    trace = getattr(self.request, "traceparent", None) or ""
    toolcall_execute(tool_call_id=tool_call_id, trace=trace if isinstance(trace, str) else "")


@shared_task(name="tools_app.tasks.audit_seal", ignore_result=True)
def audit_seal() -> None:
    """Sent by beat every AUDIT_SEAL_SECONDS: link finished audit records into the chain."""
    from tools_app.services.audit_chain import seal

    seal()


@shared_task(name="tools_app.tasks.audit_retention", ignore_result=True)
def audit_retention() -> None:
    """Hourly when AUDIT_RETENTION_DAYS is set: delete older records behind a signed cut."""
    from tools_app.services.audit_chain import retention_run

    retention_run()


@shared_task(name="tools_app.tasks.refresh_tool_source", ignore_result=True)
def refresh_tool_source(source_id: int, user_id: int | None = None) -> None:
    """List an MCP server's tools on a worker (where its sandbox is; a per-person server as
    the admin who asked), or fetch an OpenAPI document again; what changed waits for an
    admin's review."""
    from tools_app.executors.mcp.services import mcp_refresh
    from tools_app.executors.openapi.importer import openapi_refresh
    from tools_app.models import ToolSource
    from tools_app.services.sources import SourceError, source_state_set

    source = ToolSource.objects.filter(pk=source_id).first()
    if source is None:
        return
    if source.kind == ToolSource.Kind.OPENAPI:
        try:
            openapi_refresh(source)
        except SourceError as exc:
            source_state_set(source, ToolSource.State.DOWN, str(exc))
        else:
            source_state_set(source, ToolSource.State.UP)
        return
    # A failure is recorded on the source (state "down", last error) for the Tools Manager.
    with contextlib.suppress(SourceError):
        mcp_refresh(source, user_id=user_id)  # a per-person server: as the admin who asked


@shared_task(name="tools_app.tasks.end_connections", ignore_result=True)
def end_connections(user_id: int) -> None:
    """A deactivated person's connections: revoked at their authorization servers, deleted."""
    from tools_app.connections.services import connections_end_for

    connections_end_for(user_id)


@worker_ready.connect(weak=False, dispatch_uid="cc-maintenance")
def _start_maintenance(**_: object) -> None:
    """Every worker process looks for lost work too (see infra.maintenance)."""
    from infra.maintenance import start_maintenance_thread

    start_maintenance_thread()


@worker_init.connect(weak=False, dispatch_uid="cc-sandbox-orphans")
def _reap_orphaned_sandboxes(**_: object) -> None:
    """Warm sandbox containers a killed worker of this deployment left running go now (in a
    thread: an engine slow to answer must not hold the worker's start). The docker backend is
    imported here, before the thread and before the pool forks its children: a child forked
    while the thread was importing it (it is imported at first use) inherited that import's
    lock held and hung on its first docker call, "running" for good (seen in CI twice)."""
    from tools_app.sandbox import reap_orphaned_sandboxes

    with contextlib.suppress(ImportError):  # a host without the docker SDK: nothing to reap
        import docker.errors  # noqa: F401

        import tools_app.sandbox.docker_backend
        import tools_app.sandbox.docker_containers  # noqa: F401

    threading.Thread(target=reap_orphaned_sandboxes, name="sandbox-orphans", daemon=True).start()


@worker_shutdown.connect(weak=False, dispatch_uid="cc-sandbox-shutdown")
@worker_process_shutdown.connect(weak=False, dispatch_uid="cc-sandbox-process-shutdown")
def _remove_warm_sandboxes(**_: object) -> None:
    """SIGTERM/SIGINT: the worker removes its warm sandbox containers as it stops."""
    from tools_app.sandbox import shutdown_sandboxes

    shutdown_sandboxes()
