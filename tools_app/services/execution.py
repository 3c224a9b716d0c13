"""Running a bound call: claim it, run its activity with a watchdog, store and publish the result.

The watchdog thread is what makes Stop and timeouts work the same way in every mode and on
every queue: it polls the call's ``cancel_requested`` flag, enforces the deadline, flushes live
output to the card and writes a heartbeat so a lost worker can be detected (``toolcall_reap``).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from datetime import timedelta
from typing import Any

from django.conf import settings as django_settings
from django.db import close_old_connections
from django.db.models import F
from django.utils import timezone

from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.events import toolcall_publish, toolcall_publish_output
from tools_app.imported import imported_sync
from tools_app.models import ToolCall
from tools_app.registry import GROUPS, activity_name, get_tool, resolve_activity
from tools_app.runtime import ActivityContext
from tools_app.services.audit import audit_call
from tools_app.signals import toolcall_finished

logger = logging.getLogger(__name__)

POLL_SECONDS = 0.1
HEARTBEAT_SECONDS = 2.0
CARD_OUTPUT_LIMIT = 64_000  # characters of live output kept on the card
TIMEOUT_GRACE_SECONDS = 2.0  # activities enforce their own timeout; this is the backstop


class _Watchdog:
    def __init__(self, call: ToolCall, ctx: ActivityContext, timeout: float) -> None:
        self.call = call
        self.ctx = ctx
        self.deadline = time.monotonic() + timeout + TIMEOUT_GRACE_SECONDS
        self.timeout = timeout
        self.reason: str | None = None
        self._pending: list[str] = []
        self._sent = 0
        self._output = ""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"toolcall-{call.pk}", daemon=True)

    def emit(self, stream: str, text: str) -> None:
        with self._lock:
            self._pending.append(text)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> str:
        self._stop.set()
        self._thread.join(timeout=5)
        self._flush(publish=False)  # the final card carries the whole output anyway
        return self._output

    def _flush(self, *, publish: bool = True) -> None:
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
        if not text:
            return
        room = CARD_OUTPUT_LIMIT - len(self._output)
        if room <= 0:
            return
        text = text[:room]
        offset = len(self._output)
        self._output += text
        if publish:
            toolcall_publish_output(self.call, offset=offset, text=text)

    def _run(self) -> None:
        # The "running" card goes out from here, beside the activity rather than before it.
        toolcall_publish(self.call, wait=False)
        last_beat = time.monotonic()
        try:
            while not self._stop.wait(POLL_SECONDS):
                self._flush()
                now = time.monotonic()
                if now >= self.deadline and not self.ctx.cancel.is_set():
                    self.reason = "timeout"
                    self.ctx.cancel.set()
                if (
                    not self.ctx.cancel.is_set()
                    and ToolCall.objects.filter(pk=self.call.pk, cancel_requested=True).exists()
                ):
                    self.reason = "cancelled"
                    self.ctx.cancel.set()
                if now - last_beat >= HEARTBEAT_SECONDS:
                    last_beat = now
                    ToolCall.objects.filter(pk=self.call.pk, status=ToolCall.Status.RUNNING).update(
                        heartbeat_at=timezone.now(), output=self._output
                    )
        finally:
            close_old_connections()


def _settings_group(call: ToolCall) -> str:
    """An activity runs under the settings of the group it belongs to: the dev toolset's
    read_file uses the File group's paths and limits, like file_read does."""
    tool = get_tool(call.tool)
    if tool is not None:
        owner = get_tool(activity_name(tool))
        if owner is not None:
            return owner.tool_group
    return call.group


def _worker_name() -> str:
    return f"{socket.gethostname()}:{threading.current_thread().name}"


def toolcall_execute(*, tool_call_id: int) -> None:
    now = timezone.now()
    claimed = ToolCall.objects.filter(pk=tool_call_id, status=ToolCall.Status.QUEUED).update(
        status=ToolCall.Status.RUNNING,
        started_at=now,
        heartbeat_at=now,
        worker=_worker_name(),
        version=F("version") + 1,
    )
    if not claimed:  # cancelled (or taken) before it started
        return
    call = ToolCall.objects.get(pk=tool_call_id)

    imported_sync()
    tool = get_tool(call.tool)
    if tool is None or call.group not in GROUPS:  # imported a moment ago elsewhere
        imported_sync(force=True)
        tool = get_tool(call.tool)
    settings = selectors.group_settings(_settings_group(call))
    own_timeout = selectors.function_config(call.tool).timeout_seconds
    timeout = float(own_timeout or settings.timeout_seconds)
    ctx = ActivityContext(
        call_id=call.pk,
        tool_name=call.tool,
        settings=settings,
        timeout=timeout,
        workspace_id="",
        conversation_id=call.conversation_id,
        user_id=call.user_id,
    )
    from tools_app.runtime import workspace_id_for

    ctx.workspace_id = workspace_id_for(conversation_id=call.conversation_id, user_id=call.user_id)
    watchdog = _Watchdog(call, ctx, timeout)
    ctx.emit = watchdog.emit
    started = time.monotonic()
    status, result, error = ToolCall.Status.SUCCEEDED, {}, ""
    error_data: dict[str, Any] = {}
    watchdog.start()
    try:
        if tool is None:
            raise ToolError(f"tool {call.tool!r} no longer exists")
        args = tool.model_validate(call.arguments or {})
        activity = resolve_activity(tool)
        if activity is None:
            from tools_app.services.latent import latent_execute

            data = latent_execute(tool=tool, args=args, ctx=ctx)
        else:
            data = activity(args, ctx)
        if ctx.cancel.is_set() and watchdog.reason is not None:
            raise _interrupted(watchdog.reason, timeout)
        result = {"success": True, **data}
    except ToolCancelled as exc:
        if watchdog.reason == "timeout":
            status, error = ToolCall.Status.FAILED, ToolTimeout(timeout).message
        else:
            status, error = ToolCall.Status.CANCELLED, exc.message
    except PolicyDenied as exc:
        status, error = ToolCall.Status.DENIED, f"policy: {exc.reason}"
    except ToolError as exc:
        status, error, error_data = ToolCall.Status.FAILED, exc.message, exc.data
    except Exception as exc:
        logger.exception("tool call %s (%s) crashed", call.pk, call.tool)
        status, error = ToolCall.Status.FAILED, f"{call.tool} failed: {type(exc).__name__}: {exc}"
    finally:
        output = watchdog.stop()
    duration_ms = int((time.monotonic() - started) * 1000)
    if status != ToolCall.Status.SUCCEEDED:
        result = {"success": False, "error": error, **error_data}
        if output and not error_data:
            result["output"] = output[-4000:]
    result["duration_ms"] = duration_ms
    toolcall_finish(
        call,
        status=status,
        result=result,
        error=error,
        output=output,
        duration_ms=duration_ms,
        sandbox_id=ctx.sandbox_id,
        only_if=ToolCall.Status.RUNNING,
        current=True,
    )


def _interrupted(reason: str, timeout: float) -> ToolError:
    return ToolTimeout(timeout) if reason == "timeout" else ToolCancelled()


def toolcall_finish(
    call: ToolCall,
    *,
    status: str,
    result: dict[str, Any],
    error: str = "",
    output: str | None = None,
    duration_ms: int | None = None,
    sandbox_id: str = "",
    only_if: str | tuple[str, ...],
    current: bool = False,
) -> bool:
    """Move a call to a terminal status exactly once, then publish and signal it.

    ``current``: ``call`` is the row as the caller claimed it (its version is the stored one),
    so the finished call is built in memory instead of read back (one query less per call).
    """
    allowed = (only_if,) if isinstance(only_if, str) else only_if
    fields: dict[str, Any] = {
        "status": status,
        "result": result,
        "error": error,
        "finished_at": timezone.now(),
        "version": call.version + 1 if current else F("version") + 1,
    }
    if output is not None:
        fields["output"] = output
    if duration_ms is not None:
        fields["duration_ms"] = duration_ms
    if sandbox_id:
        fields["sandbox_id"] = sandbox_id
    rows = ToolCall.objects.filter(pk=call.pk, status__in=allowed)
    if current:
        rows = rows.filter(version=call.version)
    if not rows.update(**fields):
        return False
    if current:
        for name, value in fields.items():
            setattr(call, name, value)
    else:
        call.refresh_from_db()
    toolcall_publish(call)  # people first; the audit record follows a moment later
    audit_call(call)
    toolcall_finished.send(sender=ToolCall, call=call)
    return True


def toolcall_cancel(call: ToolCall, *, reason: str = "cancelled by the user") -> None:
    """Cancel a call that has not finished: at once if it has not started, else ask its
    watchdog to kill it (it answers within ~POLL_SECONDS)."""
    waiting = (ToolCall.Status.QUEUED, ToolCall.Status.AWAITING_APPROVAL)
    if call.status in waiting and toolcall_finish(
        call,
        status=ToolCall.Status.CANCELLED,
        result={"success": False, "error": reason},
        error=reason,
        duration_ms=0,
        only_if=waiting,
    ):
        return
    ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.RUNNING).update(
        cancel_requested=True
    )


def toolcall_reap_lost() -> int:
    """Fail running calls whose worker stopped sending heartbeats (crashed, killed, OOM)."""
    limit = timezone.now() - timedelta(seconds=django_settings.TOOL_HEARTBEAT_TIMEOUT)
    reaped = 0
    for call in ToolCall.objects.filter(status=ToolCall.Status.RUNNING, heartbeat_at__lt=limit):
        error = (
            f"the worker running this call ({call.worker or 'unknown'}) stopped responding; "
            "the call was abandoned"
        )
        if toolcall_finish(
            call,
            status=ToolCall.Status.FAILED,
            result={"success": False, "error": error},
            error=error,
            only_if=ToolCall.Status.RUNNING,
        ):
            reaped += 1
    return reaped
