"""Schedules: validated again here (binding may be minutes old when approval is required)."""

from __future__ import annotations

from typing import Any

from platform_app import schedules
from platform_app.executors.schedules.settings import SchedulesSettings
from platform_app.executors.schedules.tools import (
    ScheduleAdd,
    ScheduleList,
    ScheduleRemove,
    check_model,
    needs_user,
)
from tools_app.registry import activity
from tools_app.runtime import ActivityContext, BindContext


def _user(ctx: ActivityContext[SchedulesSettings]) -> int:
    return needs_user(BindContext(user_id=ctx.user_id, conversation_id=None, source="activity"))


def _agent_of(conversation_id: int | None) -> int | None:
    from chat_app.models import Conversation

    if conversation_id is None:
        return None
    return (
        Conversation.objects.filter(pk=conversation_id).values_list("agent_id", flat=True).first()
    )


@activity("schedule_add")
def schedule_add(args: ScheduleAdd, ctx: ActivityContext[SchedulesSettings]) -> dict[str, Any]:
    settings = ctx.settings
    user_id = _user(ctx)
    check_model(
        args.model, settings.allowed_models, conversation_id=args.inject_into or ctx.conversation_id
    )
    schedule = schedules.schedule_add(
        user_id=user_id,
        spec=schedules.NewSchedule(
            name=args.name,
            cron=args.cron,
            message=args.message[: settings.max_message_chars],
            model=args.model or "",
            inject_into=args.inject_into,
            timezone=settings.timezone,
        ),
        agent_id=_agent_of(ctx.conversation_id),
        tool_scope=ctx.scope,
        max_per_user=settings.max_per_user,
        min_interval_minutes=settings.min_interval_minutes,
    )
    out = schedules.schedule_describe(schedule)
    ctx.emit_output(f"scheduled {schedule.name!r}: {out['explained']}; next {out['next_run_at']}\n")
    return {"added": True, "schedule": out}


@activity("schedule_list")
def schedule_list(args: ScheduleList, ctx: ActivityContext[SchedulesSettings]) -> dict[str, Any]:
    rows = [schedules.schedule_describe(s) for s in schedules.schedules_for(_user(ctx))]
    ctx.emit_output(f"{len(rows)} schedule(s)\n")
    return {"count": len(rows), "schedules": rows}


@activity("schedule_remove")
def schedule_remove(
    args: ScheduleRemove, ctx: ActivityContext[SchedulesSettings]
) -> dict[str, Any]:
    removed = schedules.schedule_remove(user_id=_user(ctx), name=args.name)
    ctx.emit_output(f"removed {args.name!r}\n")
    return {"removed": True, "schedule": removed}
