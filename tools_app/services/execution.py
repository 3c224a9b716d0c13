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
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from infra.db import rows
from tools_app import selectors
from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.events import toolcall_publish
from tools_app.models import AuditRecord, ToolCall, ToolConfigVersion
from tools_app.registry import (
    activity_name,
    get_tool,
    latent_executor,
    resolve_activity,
)
from tools_app.runtime import ActivityContext
from tools_app.services.audit import audit_call, audit_call_insert
from tools_app.services.binding import toolcall_send
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


def _claim(tool_call_id: int) -> ToolCall | None:
    """``queued → running`` if the call is still queued, in one statement that also returns
    the claimed row, whether the call's audit record is open already (it is when the call
    waited for approval), and the tool configuration's token: ``UPDATE … RETURNING``, which
    the ORM's ``update()`` cannot do, instead of three more queries before the call starts."""
    qn = connection.ops.quote_name
    meta = ToolCall._meta
    audit, version = AuditRecord._meta, ToolConfigVersion._meta
    col = rows.column
    now = timezone.now()
    v = col(meta, "version")
    sql = (  # our own table and column names; every value is a parameter
        f"UPDATE {qn(meta.db_table)} SET {col(meta, 'status')} = %s, "  # noqa: S608
        f"{col(meta, 'started_at')} = %s, {col(meta, 'heartbeat_at')} = %s, "
        f"{col(meta, 'worker')} = %s, {v} = {v} + 1 "
        f"WHERE {col(meta, 'id')} = %s AND {col(meta, 'status')} = %s "
        f"RETURNING *, EXISTS (SELECT 1 FROM {qn(audit.db_table)} "
        f"WHERE {col(audit, 'tool_call')} = %s AND {col(audit, 'kind')} = %s) AS cc_audit_open, "
        f"(SELECT {col(version, 'token')} FROM {qn(version.db_table)} "
        f"WHERE {col(version, 'id')} = 1) AS cc_config_token"
    )
    params = [
        ToolCall.Status.RUNNING.value,
        rows.db_value(ToolCall, "started_at", now),
        rows.db_value(ToolCall, "heartbeat_at", now),
        _worker_name(),
        tool_call_id,
        ToolCall.Status.QUEUED.value,
        tool_call_id,
        AuditRecord.Kind.CALL.value,
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        names = tuple(d[0] for d in cursor.description)
    return _call_from_row(names, row)


# (vendor, returned column names) → how to build the ToolCall from such a row.
_ROW_PLANS: dict[tuple[str, tuple[str, ...]], tuple[list[Any], dict[str, int]]] = {}


def _call_from_row(names: tuple[str, ...], row: Any) -> ToolCall:
    """The ToolCall of a ``RETURNING *, …`` row, as ``ToolCall.objects.raw`` builds it (each
    field through the backend's and its own converters; other columns become attributes),
    without working out the column mapping and converters again for every call: that took
    longer than the statement."""
    key = (connection.vendor, names)
    plan = _ROW_PLANS.get(key)
    if plan is None:
        meta = ToolCall._meta
        position = {name: i for i, name in enumerate(names)}
        fields = []
        for field in meta.concrete_fields:
            expression = field.get_col(meta.db_table)
            converters = [
                *connection.ops.get_db_converters(expression),
                *expression.get_db_converters(connection),
            ]
            fields.append((position[str(field.column)], converters, expression))
        columns = {str(f.column) for f in meta.concrete_fields}
        extra = {name: i for i, name in enumerate(names) if name not in columns}
        plan = (fields, extra)
        _ROW_PLANS[key] = plan
    fields, extra = plan
    values = []
    for index, converters, expression in fields:
        value = row[index]
        for converter in converters:
            value = converter(value, expression, connection)
        values.append(value)
    call = ToolCall.from_db(
        connection.alias, [f.attname for f in ToolCall._meta.concrete_fields], values
    )
    for name, index in extra.items():
        setattr(call, name, row[index])
    return call


def toolcall_execute(*, tool_call_id: int) -> None:
    call = _claim(tool_call_id)
    if call is None:  # cancelled (or taken) before it started
        return

    # Imported tools (MCP, OpenAPI) are registered as the configuration's token has them.
    config = selectors.config_snapshot(token=getattr(call, "cc_config_token", None))
    tool = get_tool(call.tool)
    settings = config.settings(_settings_group(call))
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
        audit_open=bool(getattr(call, "cc_audit_open", True)),
    )


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
) -> bool:
    """Move a call to a terminal status exactly once, then publish and signal it.

    ``current``: ``call`` is the row as the caller claimed it (its version is the stored one),
    so the finished call is built in memory instead of read back (one query less per call).
    ``audit_open=False``: the caller knows the call has no audit record yet, so it is written
    in one INSERT rather than an UPDATE that finds nothing first.
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
    # The call's end and its audit record are stored together (above); then the card, and
    # only once it is sent what the finish sets off (the turn's next round, maybe in another
    # process), so the chat shows the call finished before what follows it.
    toolcall_publish(call)
    toolcall_finished.send(sender=ToolCall, call=call)
    return True


def _finish_current(
    call: ToolCall, allowed: tuple[str, ...], fields: dict[str, Any], *, audit_open: bool
) -> bool:
    """Store the end of a call this process claimed, and its audit record, together.

    ``UPDATE … WHERE id = … AND status IN allowed AND version = call.version``: what
    ``ToolCall.objects.filter(...).update(**fields)`` sends, written out because building it
    through the ORM took longer than the statement takes to run, on the path between the
    command's end and its finished card. On PostgreSQL the audit record's INSERT goes in the
    same statement (a data-modifying ``WITH``: one round trip, one commit); elsewhere both go
    in one transaction. Either way a call never ends without its record."""
    meta = ToolCall._meta
    sets = [f"{rows.column(meta, name)} = %s" for name in fields]
    params = [rows.db_value(ToolCall, name, value) for name, value in fields.items()]
    update = (  # our own table and column names; every value is a parameter
        f"UPDATE {connection.ops.quote_name(meta.db_table)} SET {', '.join(sets)} "  # noqa: S608
        f"WHERE {rows.column(meta, 'id')} = %s "
        f"AND {rows.column(meta, 'status')} IN ({', '.join(['%s'] * len(allowed))}) "
        f"AND {rows.column(meta, 'version')} = %s"
    )
    params += [call.pk, *allowed, call.version]
    if audit_open:  # a call that waited for approval: its record is completed, not opened
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(update, params)
            if not cursor.rowcount:
                return False
            audit_call(call, changes=fields)
        return True
    table, values, audit_params = audit_call_insert(call, fields)
    if connection.vendor == "postgresql":
        sql = f"WITH done AS ({update} RETURNING 1) INSERT INTO {table} SELECT {values} FROM done"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(sql, [*params, *audit_params])
            return bool(cursor.rowcount)
    # Both statements built before the transaction: on SQLite it holds the process's writers.
    insert = f"INSERT INTO {table} VALUES ({values})"  # noqa: S608
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(update, params)
        if not cursor.rowcount:
            return False
        cursor.execute(insert, audit_params)
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
