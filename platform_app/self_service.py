"""What a person sees and changes of their own on the self-service pages: their memory
(archival chunks and core entries), their schedules and their reports across conversations.

Every read and write is filtered by the owner: another person's id answers exactly as a
missing one (the views turn ``None``/``0`` into 404), so ids reveal nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from platform_app import preapprovals, reports, schedules
from platform_app.memory import fulltext
from platform_app.models import CoreMemoryEntry, MemoryChunk, Schedule
from tools_app.errors import PolicyDenied, ToolError
from tools_app.services.approval import ApprovalError
from tools_app.services.preapproval import preapproval_check

PAGE = 50
PREVIEW_RUNS = 5


# --- memory -------------------------------------------------------------------------------


def my_memory(*, user_id: int, query: str = "") -> list[MemoryChunk]:
    """The person's archival memory: the newest chunks, or those matching ``query`` (the
    memory tools' own full-text search), best first."""
    mine = MemoryChunk.objects.filter(user_id=user_id).defer("embedding")
    query = query.strip()
    if not query:
        return list(mine[:PAGE])
    ids = fulltext.search(user_id=user_id, query=query, limit=PAGE)
    found = {c.pk: c for c in mine.filter(pk__in=ids)}
    return [found[i] for i in ids if i in found]


def my_memory_chunk(*, user_id: int, chunk_id: int) -> MemoryChunk | None:
    return MemoryChunk.objects.filter(pk=chunk_id, user_id=user_id).defer("embedding").first()


def my_memory_delete(*, user_id: int, chunk_id: int) -> int:
    deleted, _ = MemoryChunk.objects.filter(pk=chunk_id, user_id=user_id).delete()
    return deleted


def my_core_memory(*, user_id: int) -> QuerySet[CoreMemoryEntry]:
    return CoreMemoryEntry.objects.filter(user_id=user_id).order_by("section", "key")


def my_core_delete(*, user_id: int, entry_id: int) -> int:
    deleted, _ = CoreMemoryEntry.objects.filter(pk=entry_id, user_id=user_id).delete()
    return deleted


# --- schedules ----------------------------------------------------------------------------


class ScheduleInvalid(ValueError):
    """The form's values cannot be used; ``args[0]`` says why."""


@dataclass
class ScheduleForm:
    name: str
    cron: str
    message: str
    timezone: str = "UTC"
    enabled: bool = True

    @classmethod
    def of(cls, data: Any, *, default_zone: str) -> ScheduleForm:
        return cls(
            name=str(data.get("name", "")).strip()[:100],
            cron=str(data.get("cron", "")).strip()[:120],
            message=str(data.get("message", "")).strip(),
            timezone=str(data.get("timezone", "")).strip()[:64] or default_zone,
            enabled=data.get("enabled", "on") in ("on", "true", "1", True),
        )


def _settings() -> Any:
    from platform_app.executors.schedules.settings import SchedulesSettings
    from tools_app.selectors import group_settings

    return group_settings("schedules", SchedulesSettings)


def default_zone() -> str:
    return str(_settings().timezone)


def cron_preview(
    expression: str, *, tz: str = "UTC", count: int = PREVIEW_RUNS, now: datetime | None = None
) -> list[datetime]:
    """The next ``count`` firing times (aware, in ``tz``). Raises ScheduleInvalid."""
    try:
        cron = schedules.cron_check(
            expression, tz=tz, min_interval_minutes=_settings().min_interval_minutes
        )
        times = schedules.cron_times(cron, tz=tz, after=now or timezone.now())
        return list(islice(times, count))
    except schedules.CronInvalid as exc:
        raise ScheduleInvalid(str(exc)) from exc


def _validate(form: ScheduleForm) -> None:
    settings = _settings()
    if not form.name:
        raise ScheduleInvalid("give the schedule a name")
    if not form.message:
        raise ScheduleInvalid("write the message the agent is sent each time")
    if len(form.message) > settings.max_message_chars:
        raise ScheduleInvalid(
            f"the message is {len(form.message):,} characters; the limit is "
            f"{settings.max_message_chars:,}"
        )
    cron_preview(form.cron, tz=form.timezone, count=1)


def my_schedule(*, user_id: int, schedule_id: int) -> Schedule | None:
    return Schedule.objects.filter(pk=schedule_id, user_id=user_id).first()


def _preapprovals_checked(*, approver: Any, owner_id: int, data: Any) -> list[Any]:
    """The pre-approvals posted with a schedule, checked before anything is stored."""
    if data is None or approver is None:
        return []
    try:
        items = preapprovals.preapprovals_parse(data)
        return [preapproval_check(approver=approver, owner_id=owner_id, item=i) for i in items]
    except ApprovalError as exc:
        raise ScheduleInvalid(exc.message) from exc


def _preapprove(schedule: Schedule, *, approver: Any, data: Any) -> None:
    try:
        preapprovals.schedule_preapprove_for(schedule=schedule, approver=approver, data=data)
    except ApprovalError as exc:  # changed since the check: nothing of this edit is kept
        raise ScheduleInvalid(exc.message) from exc


def my_schedule_create(
    *,
    user_id: int,
    form: ScheduleForm,
    tool_scope: list[str] | None = None,
    preapprove: Any = None,
    approver: Any = None,
) -> Schedule:
    """``tool_scope``: the tool list of whoever creates it (an API token's,
    ``api_token_turn_scope``); each firing binds within it. None: its owner on the page, whose
    schedule is limited like their chat. ``preapprove``: calls its runs may make without
    waiting, as posted (``preapprovals_parse``), granted by ``approver`` — all, or no
    schedule at all."""
    _validate(form)
    _preapprovals_checked(approver=approver, owner_id=user_id, data=preapprove)
    with transaction.atomic():
        schedule = _create(user_id=user_id, form=form, tool_scope=tool_scope)
        if preapprove:
            _preapprove(schedule, approver=approver, data=preapprove)
    return schedule


def _create(*, user_id: int, form: ScheduleForm, tool_scope: list[str] | None) -> Schedule:
    settings = _settings()
    try:
        schedule = schedules.schedule_add(
            user_id=user_id,
            spec=schedules.NewSchedule(
                name=form.name, cron=form.cron, message=form.message, timezone=form.timezone
            ),
            agent_id=None,
            tool_scope=tool_scope,
            max_per_user=settings.max_per_user,
            min_interval_minutes=settings.min_interval_minutes,
        )
    except (ToolError, PolicyDenied) as exc:
        raise ScheduleInvalid(str(exc)) from exc
    if not form.enabled:
        Schedule.objects.filter(pk=schedule.pk).update(enabled=False)
        schedule.enabled = False
    return schedule


def my_schedule_update(
    *,
    schedule: Schedule,
    form: ScheduleForm,
    tool_scope: list[str] | None = None,
    preapprove: Any = None,
    approver: Any = None,
) -> Schedule:
    """Apply the form. ``tool_scope``: the tool list of whoever edits (an API token's) —
    the stored scope is narrowed to it, never widened (``schedule_scope_narrow``).

    None — the owner on the My schedules page — keeps the stored scope as it is. A schedule
    a limited token or a model's ``schedule_add`` made stays within that limit when its owner
    renames it, re-times it or rewrites its message in the browser: an edit is not taken as
    consent to run the schedule with everything the owner may use (the page does not even
    show the limit). To give a schedule the owner's full chat, they delete it and make it
    again on the page.

    ``preapprove``: as for ``my_schedule_create``, granted for the schedule as edited (an edit
    of its message voids the pre-approvals made before: their hash no longer matches)."""
    _validate(form)
    _preapprovals_checked(approver=approver, owner_id=schedule.user_id, data=preapprove)
    if (
        Schedule.objects.filter(user_id=schedule.user_id, name=form.name)
        .exclude(pk=schedule.pk)
        .exists()
    ):
        raise ScheduleInvalid(f"you already have a schedule named {form.name!r}")
    schedule.name, schedule.message = form.name, form.message
    schedule.cron = schedules.cron_normalise(form.cron)
    schedule.timezone, schedule.enabled = form.timezone, form.enabled
    schedules.schedule_reschedule(schedule)
    schedule.last_error = ""
    with transaction.atomic():
        # The scope as stored now, not as read with the form: an edit saved meanwhile may
        # have narrowed it, and saving the older copy would widen it again.
        stored = list(
            Schedule.objects.select_for_update()
            .filter(pk=schedule.pk)
            .values_list("tool_scope", flat=True)
        )
        if not stored:  # deleted meanwhile: not made again by saving this copy
            raise ScheduleInvalid("this schedule was deleted")
        schedule.tool_scope = schedules.schedule_scope_narrow(stored[0], tool_scope)
        schedule.save()
        if preapprove:
            _preapprove(schedule, approver=approver, data=preapprove)
    return schedule


def my_schedule_pause(*, schedule: Schedule, paused: bool) -> Schedule:
    schedule.enabled = not paused
    if not paused:  # resumed: the next time from now, not the one missed while paused
        schedules.schedule_reschedule(schedule)
    schedule.save(update_fields=["enabled", "next_run_at"])
    return schedule


# --- reports ------------------------------------------------------------------------------


def my_reports(*, user_id: int) -> list[dict[str, Any]]:
    """Every report of the person's conversations, newest first."""
    from chat_app.models import Conversation
    from tools_app.models import ToolCall

    # Only where a report was written (as the quota counts them), not every conversation.
    wrote = ToolCall.objects.filter(
        tool="create_report", status=ToolCall.Status.SUCCEEDED, conversation__owner_id=user_id
    ).values("conversation_id")
    found: list[dict[str, Any]] = []
    for conversation in Conversation.objects.filter(owner_id=user_id, pk__in=wrote):
        for report in reports.conversation_reports(conversation):
            found.append({**report, "conversation": conversation})
    found.sort(key=lambda r: str(r.get("name", "")), reverse=True)  # names start with a stamp
    return found
