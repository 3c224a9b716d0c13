"""Where the events come from: the signals the lower layers send (a turn finished, a call
waits for approval or was decided, a call failed, an imported tool's definition changed or was
reviewed) and the schedules (``schedule_fired``).
Receivers only notify: whatever they do, they return nothing anyone reads and raise nothing
(``webhook_emit`` swallows its own failures)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings

from platform_app.models import WebhookEndpoint
from platform_app.webhooks.services import webhook_emit

Event = WebhookEndpoint.Event


def _username(user_id: int | None) -> str:
    from django.contrib.auth import get_user_model

    if user_id is None:
        return ""
    found = get_user_model().objects.filter(pk=user_id).values_list("username", flat=True)
    return str(next(iter(found), ""))


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def _call_data(call: Any) -> dict[str, Any]:
    return {
        "tool_call_id": call.pk,
        "tool": call.tool,
        "group": call.group,
        "status": call.status,
        "source": call.source,
        "conversation_id": call.conversation_id,
        "turn_id": call.turn_id,
        "user": _username(call.user_id),
    }


def on_turn_finished(sender: Any, turn: Any, **kwargs: Any) -> None:
    webhook_emit(
        Event.TURN_FINISHED,
        lambda: {
            "turn_id": turn.pk,
            "conversation_id": turn.conversation_id,
            "user": _username(turn.user_id),
            "status": turn.status,
            "source": turn.source,
            "kind": turn.kind,
            "error": turn.error[:500],
            "started_at": _iso(turn.started_at),
            "finished_at": _iso(turn.finished_at),
        },
    )


def on_approval_requested(sender: Any, call: Any, **kwargs: Any) -> None:
    def data() -> dict[str, Any]:
        expires = call.created_at + timedelta(minutes=settings.APPROVAL_TIMEOUT_MINUTES)
        return {
            **_call_data(call),
            "approval_mode": call.approval_mode or "requester",
            "approvers": call.approvers_label or _username(call.user_id),
            "expires_at": _iso(expires),
        }

    webhook_emit(Event.APPROVAL_REQUESTED, data)


def on_approval_decided(sender: Any, call: Any, decision: str, **kwargs: Any) -> None:
    def data() -> dict[str, Any]:
        call.refresh_from_db()
        return {
            **_call_data(call),
            "decision": decision,
            "decided_by": _username(call.decided_by_id),
        }

    webhook_emit(Event.APPROVAL_DECIDED, data)


def on_toolcall_finished(sender: Any, call: Any, **kwargs: Any) -> None:
    if call.status != "failed":
        return
    webhook_emit(Event.TOOLCALL_FAILED, lambda: {**_call_data(call), "error": call.error[:500]})


def on_definition_changed(sender: Any, data: dict[str, Any], **kwargs: Any) -> None:
    webhook_emit(Event.DEFINITION_CHANGED, lambda: dict(data))


def on_definition_reviewed(sender: Any, data: dict[str, Any], **kwargs: Any) -> None:
    webhook_emit(Event.DEFINITION_REVIEWED, lambda: dict(data))


def schedule_fired(*, schedule: Any, conversation_id: int, turn_id: int | None, error: str) -> None:
    """Called by ``platform_app.schedules.schedule_fire`` each time a schedule is due."""
    webhook_emit(
        Event.SCHEDULE_FIRED,
        lambda: {
            "schedule_id": schedule.pk,
            "name": schedule.name,
            "user": _username(schedule.user_id),
            "conversation_id": conversation_id,
            "turn_id": turn_id,
            "status": "skipped" if error else "started",
            "error": error,
        },
    )


def connect() -> None:
    """Called by ``platform_app.apps`` at ready()."""
    from chat_app.signals import turn_finished
    from tools_app.models import config_track
    from tools_app.signals import (
        approval_decided,
        approval_requested,
        definition_changed,
        definition_reviewed,
        toolcall_finished,
    )

    turn_finished.connect(on_turn_finished, dispatch_uid="platform.webhooks.turn_finished")
    approval_requested.connect(on_approval_requested, dispatch_uid="platform.webhooks.requested")
    approval_decided.connect(on_approval_decided, dispatch_uid="platform.webhooks.decided")
    toolcall_finished.connect(on_toolcall_finished, dispatch_uid="platform.webhooks.failed")
    definition_changed.connect(on_definition_changed, dispatch_uid="platform.webhooks.definition")
    definition_reviewed.connect(
        on_definition_reviewed, dispatch_uid="platform.webhooks.definition_reviewed"
    )
    # Who listens is kept under the configuration token (services._subscribed).
    config_track(WebhookEndpoint)
