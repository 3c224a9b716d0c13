"""Running a bound call: claim it, run its activity under watch, store and publish the result.

The watch (``tools_app.services.watchdog``) is what makes Stop and timeouts work the same way
in every mode and on every queue: it polls the call's ``cancel_requested`` flag, enforces the
deadline, flushes live output to the card and writes a heartbeat so a lost worker can be
detected (``toolcall_reap_lost``).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from datetime import timedelta
from typing import Any, cast

from django.conf import settings as django_settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.utils import timezone

from infra import metrics, tracing
from infra.logs import log_context
from infra.maintenance import close_connections_quietly
from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.events import toolcall_publish
from tools_app.guards import guard_output, guard_result
from tools_app.models import AuditRecord, ToolCall
from tools_app.registry import (
    activity_name,
    get_tool,
    latent_executor,
    resolve_activity,
)
from tools_app.runtime import ActivityContext
from tools_app.services.audit import audit_call
from tools_app.services.binding import toolcall_send
from tools_app.services.call_statements import call_claim, call_end
from tools_app.services.narrowing import settings_narrowed
from tools_app.services.watchdog import watch_call
from tools_app.signals import toolcall_finished

logger = logging.getLogger(__name__)


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


def _claim(tool_call_id: int) -> tuple[ToolCall, bool] | None:
    """``queued → running`` if the call is still queued: a conditional UPDATE, so of two
    workers given the same call one runs it. Then the claimed row, and whether its audit
    record is open already (it is when the call waited for approval), so that the finish
    completes it or creates it without looking for it first."""
    call = call_claim(tool_call_id, worker=_worker_name(), now=timezone.now())
    if call is None:
        return None
    # Binding stores a call at version 0 and the claim made it 1: a record can only exist
    # when something (an approval) changed the call in between.
    audit_open = (
        call.version > 1
        and AuditRecord.objects.filter(
            tool_call_id=tool_call_id, kind=AuditRecord.Kind.CALL
        ).exists()
    )
    return call, audit_open


def toolcall_execute(*, tool_call_id: int, trace: str = "") -> None:
    """Run a queued call; ``trace``: the ``traceparent`` it was sent with (its span's
    parent)."""
    claimed = _claim(tool_call_id)
    if claimed is None:  # cancelled (or taken) before it started
        return
    call, audit_open = claimed
    with log_context(call=call.pk, turn=call.turn_id, conversation=call.conversation_id):
        _execute_traced(call, audit_open, trace)


def _execute_traced(call: ToolCall, audit_open: bool, trace: str) -> None:
    if not tracing.enabled():
        _execute(call, audit_open)
        return
    attributes = {"cc.tool": call.tool, "cc.tool.group": call.group, "cc.tool_call.id": call.pk}
    with tracing.span(f"tool {call.tool}", parent=trace, attributes=attributes) as span:
        ctx = _execute(call, audit_open)
        span.set_attributes(
            {
                "cc.tool.status": call.status,
                "cc.policy.verdict": call.policy_verdict,
                "cc.sandbox.backend": str(ctx.extra.get("sandbox_backend", "")),
            }
        )
        if call.status != ToolCall.Status.SUCCEEDED:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, (call.error or call.status)[:500]))


def _execute(call: ToolCall, audit_open: bool) -> ActivityContext[Any]:

    # Imported tools (MCP, OpenAPI) are registered as the configuration's token has them.
    config = selectors.config_snapshot(token=getattr(call, "cc_config_token", None))
    tool = get_tool(call.tool)
    settings_group = _settings_group(call)
    # The conversation's agent profile may lower the group's limits for its calls (the
    # profile read from memory under the call's configuration).
    with selectors.config_pinned(config):
        settings = settings_narrowed(
            config.settings(settings_group),
            group=settings_group,
            conversation_id=call.conversation_id,
        )
    own_timeout = config.function(call.tool).timeout_seconds
    timeout = float(own_timeout or settings.timeout_seconds)
    ctx = ActivityContext(
        call_id=call.pk,
        tool_name=call.tool,
        settings=settings,
        timeout=timeout,
        workspace_id="",
        conversation_id=call.conversation_id,
        user_id=call.user_id,
        scope=call.scope,
        turn_id=call.turn_id,
    )
    from tools_app.runtime import workspace_id_for

    ctx.workspace_id = workspace_id_for(conversation_id=call.conversation_id, user_id=call.user_id)
    watchdog = watch_call(call, ctx, timeout)
    ctx.emit = watchdog.emit
    started = time.monotonic()
    status, result, error = ToolCall.Status.SUCCEEDED, {}, ""
    error_data: dict[str, Any] = {}
    try:
        if tool is None:
            raise ToolError(f"tool {call.tool!r} no longer exists")
        args = tool.model_validate(call.arguments or {})
        activity = resolve_activity(tool)
        if activity is None:
            latent = latent_executor()
            if latent is None:
                raise ToolError(f"{tool.tool_name} has no activity and cannot run latently here")
            data = latent(tool, args, ctx)
        else:
            data = activity(args, ctx)
        if ctx.cancel.is_set() and watchdog.reason is not None:
            raise _interrupted(watchdog.reason, timeout)
        result = _storable({"success": True, **data})
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
        output = watchdog.close()
    duration_ms = int((time.monotonic() - started) * 1000)
    if status != ToolCall.Status.SUCCEEDED:
        error = _without_nul(error)
        try:
            result = _storable({"success": False, "error": error, **error_data})
        except ToolError:  # the error's own data cannot be stored: the message can
            result = {"success": False, "error": error}
        if output and not error_data:
            result["output"] = output[-4000:]
    # Guards on the result, before anything can read it (the model, the card, /mcp/, /v1),
    # and on the printed output kept beside it.
    group_settings = config.settings(call.group)
    result, guards = _guarded(call, result, group_settings)
    output = _output_guarded(call, output, group_settings)
    if status == ToolCall.Status.SUCCEEDED and result.get("success") is False:
        status, error = ToolCall.Status.FAILED, str(result.get("error", ""))
    result["duration_ms"] = duration_ms
    _finish_on_a_working_connection(
        call,
        status=status,
        result=result,
        error=error,
        output=output,
        duration_ms=duration_ms,
        sandbox_id=ctx.sandbox_id,
        only_if=ToolCall.Status.RUNNING,
        current=True,
        audit_open=audit_open,
        guards=guards,
    )
    return ctx


def _guarded(
    call: ToolCall, result: dict[str, Any], settings: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return guard_result(call, result, settings)
    except Exception:  # a guard that breaks withholds the result rather than pass it unread
        logger.exception("the result guards of call %s crashed", call.pk)
        error = "the guards could not check this result (an internal error, logged)"
        return {"success": False, "error": error}, list(call.guards or [])


def _output_guarded(call: ToolCall, output: str, settings: Any) -> str:
    try:
        return guard_output(output, settings)
    except Exception:  # withheld rather than kept unread
        logger.exception("the output guards of call %s crashed", call.pk)
        return "[output withheld: the guards could not check it]"


FINISH_RETRY_SECONDS = (0.5, 1.0, 2.0, 4.0)


def _finish_on_a_working_connection(call: ToolCall, **finish: Any) -> None:
    """``toolcall_finish``, tried again on a new connection when the database connection was
    lost while the activity ran (a restart or failover terminates every connection): the call
    ends with its own result instead of waiting for the reaper to fail it as "worker lost".
    Trying again is safe: the end is a conditional UPDATE on the claimed version, so an end
    that was stored before the connection went finds nothing to change the second time."""
    for delay in (*FINISH_RETRY_SECONDS, None):
        try:
            toolcall_finish(call, **finish)
            return
        except (OperationalError, InterfaceError) as exc:
            if delay is None:
                raise
            logger.warning(
                "tool call %s: the database connection was lost (%s); finishing the call on "
                "a new one",
                call.pk,
                str(exc).strip(),
            )
            close_connections_quietly("tool call finish")
            time.sleep(delay)


def _storable(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as both databases can store it, or ToolError saying why it cannot be.

    What an activity returns is only checked here: a value JSON cannot hold (bytes, a set,
    NaN, which neither database accepts) used to raise out of the finish and leave the call
    running until the reaper. NUL characters are JSON but PostgreSQL's jsonb refuses them:
    they are replaced, in both modes, so a result reads the same in each."""
    try:
        text = json.dumps(result, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolError(f"the tool returned a result that cannot be stored: {exc}") from None
    if "\\u0000" in text:
        return cast("dict[str, Any]", _without_nul(result))
    return result


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_nul(v) for v in value]
    return value


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
    audit_open: bool = True,
    guards: list[dict[str, Any]] | None = None,
) -> bool:
    """Move a call to a terminal status exactly once, then publish and signal it.

    ``current``: ``call`` is the row as the caller claimed it (its version is the stored one),
    so the finished call is built in memory instead of read back (one query less per call).
    ``audit_open=False``: the caller knows the call has no audit record yet, so it is created
    rather than looked for by an UPDATE that finds nothing first.
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
    if guards:
        fields["guards"] = guards
    if current:
        if not _finish_current(call, allowed, fields, audit_open=audit_open):
            return False
        for name, value in fields.items():
            setattr(call, name, value)
    else:
        with transaction.atomic():
            matching = ToolCall.objects.filter(pk=call.pk, status__in=allowed)
            if not matching.update(**fields):
                return False
            call.refresh_from_db()
            audit_call(call, new=not audit_open)
    metrics.tool_call_ended(
        tool=call.tool,
        status=status,
        source=call.source,
        seconds=None if duration_ms is None else duration_ms / 1000,
    )
    # The call's end and its audit record are stored together (above); then the card, and
    # only once it is sent what the finish sets off (the turn's next round, maybe in another
    # process), so the chat shows the call finished before what follows it.
    toolcall_publish(call)
    toolcall_finished.send(sender=ToolCall, call=call)
    return True


def _finish_current(
    call: ToolCall, allowed: tuple[str, ...], fields: dict[str, Any], *, audit_open: bool
) -> bool:
    """Store the end of a call this process claimed (``version``: nobody else changed it
    meanwhile) and its audit record together, so a call never ends without its record."""
    with transaction.atomic():
        if not call_end(call, fields, allowed=allowed):
            return False
        audit_call(call, new=not audit_open, changes=fields)
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
            f"worker lost: the worker running this call ({call.worker or 'unknown'}) stopped "
            "responding, so the call was abandoned"
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


def toolcall_redeliver_queued() -> int:
    """Queue again the calls that have waited a heartbeat timeout without a worker taking
    them: their message may have been lost (a Redis restart keeps nothing). Claiming a call
    is a conditional UPDATE, so a call queued twice still runs once."""
    now = timezone.now()
    limit = now - timedelta(seconds=django_settings.TOOL_HEARTBEAT_TIMEOUT)
    stale = ToolCall.objects.filter(status=ToolCall.Status.QUEUED).filter(
        Q(heartbeat_at__lt=limit) | Q(heartbeat_at__isnull=True, created_at__lt=limit)
    )
    sent = 0
    for call_id, queue in stale.values_list("pk", "queue"):
        if ToolCall.objects.filter(pk=call_id, status=ToolCall.Status.QUEUED).update(
            heartbeat_at=now
        ):
            toolcall_send(call_id, queue or "tools")
            sent += 1
    return sent
