"""Schedules: cron expressions that run an agent turn of their owner when due.

Parsing and the next firing time come from cronsim (the cron evaluator of healthchecks.io:
five fields, day-of-month/day-of-week "or" semantics as in Vixie cron, DST handled in the
schedule's time zone). Firing is driven by Celery beat, which sends ``schedules_tick`` every
``SCHEDULES_TICK_SECONDS`` (inside the web process in embedded mode, ``celery beat`` in
distributed mode); the tick fires what is due here.

A due schedule is *claimed* by moving its ``next_run_at`` on with a conditional UPDATE
(``WHERE next_run_at = <the value read>``): of several ticks, beats or workers looking at it at
once, exactly one wins, so a schedule never fires twice for one due time. A schedule that was
due while nothing ran (the server was down) fires once when it is next seen, not once per
missed time; its next time is computed from now.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, QuerySet
from django.utils import timezone, translation
from django.utils.translation import gettext

from infra.prepared import Prepared
from platform_app.models import Schedule, UserPreferences
from tools_app.errors import PolicyDenied, ToolError
from tools_app.runtime import scope_narrow

logger = logging.getLogger(__name__)

ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
CRON_HELP = (
    "five fields: minute hour day-of-month month day-of-week, e.g. '0 9 * * 1-5' "
    "(09:00 on weekdays) or '*/15 * * * *'; or @hourly, @daily, @weekly, @monthly, @yearly"
)
# How many upcoming firings are compared with the minimum interval.
_INTERVAL_SAMPLES = 60


class CronInvalid(ValueError):
    """The expression cannot be used; ``args[0]`` says why in words the model can act on."""


def cron_normalise(expression: str) -> str:
    text = " ".join(expression.split())
    return ALIASES.get(text.lower(), text)


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name too long
        raise CronInvalid(f"unknown time zone {name!r}") from exc


def cron_times(expression: str, *, tz: str, after: datetime) -> CronSim:
    """The firing times after ``after`` (an iterator of aware datetimes in ``tz``)."""
    text = cron_normalise(expression)
    fields = len(text.split())
    if fields != 5:
        # cronsim also reads a sixth field (seconds): "* * * * * *" would fire every second.
        raise CronInvalid(
            f"invalid cron expression {expression!r}: Wrong number of fields ({fields}, not 5; "
            f"there is no seconds field) ({CRON_HELP})"
        )
    start = after.astimezone(zone(tz)).replace(second=0, microsecond=0)
    try:
        return CronSim(text, start)
    except CronSimError as exc:
        raise CronInvalid(f"invalid cron expression {expression!r}: {exc} ({CRON_HELP})") from exc


def cron_next(expression: str, *, tz: str, after: datetime) -> datetime:
    times = cron_times(expression, tz=tz, after=after)
    try:
        return next(times).astimezone(ZoneInfo("UTC"))
    except StopIteration as exc:  # e.g. 30 February: never
        raise CronInvalid(f"the cron expression {expression!r} never fires") from exc
    except CronSimError as exc:
        raise CronInvalid(f"invalid cron expression {expression!r}: {exc} ({CRON_HELP})") from exc


def cron_check(expression: str, *, tz: str = "UTC", min_interval_minutes: int = 1) -> str:
    """Validate ``expression``; the normalised five-field form. Raises CronInvalid."""
    times = cron_times(expression, tz=tz, after=timezone.now())
    try:
        upcoming = [next(times) for _ in range(_INTERVAL_SAMPLES)]
    except StopIteration:
        upcoming = []
    except CronSimError as exc:
        raise CronInvalid(f"invalid cron expression {expression!r}: {exc} ({CRON_HELP})") from exc
    if not upcoming:
        raise CronInvalid(f"the cron expression {expression!r} never fires")
    # Always, even at the one-minute floor; in UTC, as local wall-clock times repeat at DST.
    minimum = max(1, min_interval_minutes)
    instants = [t.astimezone(UTC) for t in upcoming]
    if len(instants) > 1:
        shortest = min(b - a for a, b in zip(instants, instants[1:], strict=False))
        if shortest < timedelta(minutes=minimum):
            raise CronInvalid(
                f"the cron expression {expression!r} fires every "
                f"{int(shortest.total_seconds() // 60)} minute(s); the shortest interval "
                f"allowed is {minimum} minute{'s' if minimum > 1 else ''}"
            )
    return cron_normalise(expression)


def cron_explain(expression: str) -> str:
    try:
        return str(CronSim(cron_normalise(expression), timezone.now()).explain())
    except Exception:  # explain() is best effort, for people
        return expression


# --- reads --------------------------------------------------------------------------------


def schedules_for(user_id: int) -> QuerySet[Schedule]:
    return Schedule.objects.filter(user_id=user_id).select_related("inject_into", "last_turn")


# The chat page's schedules panel, on every page load: compiled once per process.
_LISTED = Prepared(schedules_for, user_id=int)


def schedules_listed(user_id: int) -> list[Schedule]:
    """``schedules_for``, read (the chat page's panel and its refresh)."""
    return list(_LISTED.rows(user_id=user_id))


def schedule_describe(schedule: Schedule) -> dict[str, Any]:
    last_turn = schedule.last_turn
    return {
        "name": schedule.name,
        "cron": schedule.cron,
        "explained": cron_explain(schedule.cron),
        "timezone": schedule.timezone,
        "message": schedule.message,
        "model": schedule.model or None,
        "inject_into": schedule.inject_into_id,
        "enabled": schedule.enabled,
        "next_run_at": _iso(schedule.next_run_at),
        "last_run_at": _iso(schedule.last_run_at),
        "last_status": (last_turn.status if last_turn else schedule.last_status) or None,
        "last_conversation": last_turn.conversation_id if last_turn else None,
        "runs": schedule.run_count,
    }


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value else None


# --- writes -------------------------------------------------------------------------------


def conversation_owned(*, conversation_id: int, user_id: int | None) -> int:
    """``conversation_id`` if the caller owns it; PolicyDenied (same words whether it exists
    or not: another user's ids are not revealed)."""
    from chat_app.models import Conversation

    if (
        user_id is None
        or not Conversation.objects.filter(pk=conversation_id, owner_id=user_id).exists()
    ):
        raise PolicyDenied(f"conversation {conversation_id} is not one of your conversations")
    return conversation_id


def quota_check(*, user_id: int, limit: int) -> None:
    count = Schedule.objects.filter(user_id=user_id).count()
    if count >= limit:
        raise PolicyDenied(
            f"you have {count} schedule(s); the limit is {limit} per user — "
            "remove one with schedule_remove first"
        )


@dataclass
class NewSchedule:
    name: str
    cron: str
    message: str
    model: str = ""
    inject_into: int | None = None
    timezone: str = "UTC"


def schedule_add(
    *,
    user_id: int,
    spec: NewSchedule,
    agent_id: int | None,
    max_per_user: int,
    tool_scope: list[str] | None = None,
    min_interval_minutes: int = 1,
    now: datetime | None = None,
) -> Schedule:
    """Validate, then store. Raises ToolError / PolicyDenied with words for the model.
    ``tool_scope``: the tool list of whoever adds it — the call of ``schedule_add``, the API
    token of ``POST /api/schedules`` — each firing's turn binds within it. None: its owner
    (the My schedules page, the admin), limited like their chat."""
    try:
        cron = cron_check(spec.cron, tz=spec.timezone, min_interval_minutes=min_interval_minutes)
        next_run = cron_next(cron, tz=spec.timezone, after=now or timezone.now())
    except CronInvalid as exc:
        raise ToolError(str(exc)) from exc
    if spec.inject_into is not None:
        conversation_owned(conversation_id=spec.inject_into, user_id=user_id)
    try:
        with transaction.atomic():
            if Schedule.objects.filter(user_id=user_id, name=spec.name).exists():
                raise ToolError(_duplicate(spec.name))
            quota_check(user_id=user_id, limit=max_per_user)
            return Schedule.objects.create(
                user_id=user_id,
                name=spec.name,
                cron=cron,
                timezone=spec.timezone,
                message=spec.message,
                model=spec.model,
                inject_into_id=spec.inject_into,
                agent_id=agent_id,
                tool_scope=tool_scope,
                next_run_at=next_run,
            )
    except IntegrityError as exc:  # the same name added at the same moment
        raise ToolError(_duplicate(spec.name)) from exc


def _duplicate(name: str) -> str:
    return (
        f"a schedule named {name!r} already exists; pick another name, or remove it first "
        "with schedule_remove"
    )


def schedule_remove(*, user_id: int, name: str) -> dict[str, Any]:
    schedule = Schedule.objects.filter(user_id=user_id, name=name).first()
    if schedule is None:
        names = list(Schedule.objects.filter(user_id=user_id).values_list("name", flat=True))
        known = ", ".join(repr(n) for n in names) or "you have none"
        raise ToolError(f"there is no schedule named {name!r} (schedules: {known})")
    described = schedule_describe(schedule)
    schedule.delete()
    return described


def schedule_scope_narrow(stored: list[str] | None, scope: list[str] | None) -> list[str] | None:
    """A schedule's tool scope after someone limited to ``scope`` changed it: the tools in
    both (None stands for "not narrowed"). Whoever edits a schedule may narrow it, never
    widen it: its message then runs within what every hand that shaped it could use."""
    return scope_narrow(scope, stored)


def schedule_reschedule(schedule: Schedule, *, now: datetime | None = None) -> None:
    """After an edit (the admin): the next time from the (new) expression."""
    schedule.next_run_at = cron_next(
        schedule.cron, tz=schedule.timezone, after=now or timezone.now()
    )


# --- firing -------------------------------------------------------------------------------


def beat_ticked(*, now: datetime | None = None) -> None:
    """Note that a tick ran (one upsert), for the Tools Manager's Schedules row."""
    from platform_app.models import BeatTick

    BeatTick.objects.bulk_create(
        [BeatTick(pk=1, at=now or timezone.now())],
        update_conflicts=True,
        unique_fields=["id"],
        update_fields=["at"],
    )


def beat_last_tick() -> datetime | None:
    from platform_app.models import BeatTick

    return BeatTick.objects.filter(pk=1).values_list("at", flat=True).first()


def schedules_fire_due(*, now: datetime | None = None, limit: int = 100) -> int:
    """Fire every enabled schedule due at ``now``; how many this call fired."""
    now = now or timezone.now()
    due = list(
        Schedule.objects.filter(enabled=True, next_run_at__lte=now, user__is_active=True).order_by(
            "next_run_at"
        )[:limit]
    )
    fired = 0
    for schedule in due:
        try:
            if schedule_claim(schedule, now=now):
                schedule_fire(schedule)
                fired += 1
        except Exception:
            logger.exception("schedule %s (%s) failed to fire", schedule.pk, schedule.name)
    return fired


def schedule_claim(schedule: Schedule, *, now: datetime) -> bool:
    """Move ``next_run_at`` on, if nobody else did since it was read: True means ours."""
    try:
        following: datetime | None = cron_next(schedule.cron, tz=schedule.timezone, after=now)
        error = ""
    except CronInvalid as exc:  # edited into something unusable in the admin
        following, error = None, str(exc)
    claimed = Schedule.objects.filter(
        pk=schedule.pk, enabled=True, next_run_at=schedule.next_run_at
    ).update(
        next_run_at=following,
        last_run_at=now,
        run_count=F("run_count") + 1,
        **({"enabled": False, "last_error": error, "last_status": "disabled"} if error else {}),
    )
    return bool(claimed) and not error


def schedule_fire(schedule: Schedule) -> None:
    """Run the schedule's message as a turn of its owner (never waits for the turn)."""
    from chat_app.models import Conversation, Message, Turn
    from chat_app.services.turns import TurnError, turn_start
    from platform_app.webhooks.receivers import schedule_fired

    conversation = None
    if schedule.inject_into_id is not None:
        conversation = Conversation.objects.filter(
            pk=schedule.inject_into_id, owner_id=schedule.user_id
        ).first()
    if conversation is None:
        # A new conversation speaks its owner's language (their choice in the account menu).
        language = (
            UserPreferences.objects.filter(user_id=schedule.user_id)
            .values_list("language", flat=True)
            .first()
            or ""
        )
        stamp = timezone.now().strftime("%Y-%m-%d %H:%M")
        with translation.override(language or settings.LANGUAGE_CODE):
            title = gettext("Schedule %(name)s · %(stamp)s UTC") % {
                "name": schedule.name,
                "stamp": stamp,
            }
        conversation = Conversation.objects.create(
            owner_id=schedule.user_id,
            title=title[:200],
            agent_id=schedule.agent_id,
            language=language,
        )
    try:
        with translation.override(conversation.language or settings.LANGUAGE_CODE):
            turn = turn_start(
                conversation=conversation,
                user_id=schedule.user_id,
                text=schedule.message,
                model=schedule.model,
                origin=Message.Origin.SCHEDULE,
                source=Turn.Source.SCHEDULE,
                scope=schedule.tool_scope,
                schedule_id=schedule.pk,
            )
    except TurnError as exc:
        reason = f"skipped: {exc}"
        Schedule.objects.filter(pk=schedule.pk).update(
            last_status="skipped", last_error=reason, last_turn=None
        )
        with translation.override(conversation.language or settings.LANGUAGE_CODE):
            words = gettext("Schedule “%(name)s” was due but was skipped: %(error)s.") % {
                "name": schedule.name,
                "error": exc,
            }
        _notice(conversation.pk, words)
        _schedules_changed(conversation.pk)
        schedule_fired(
            schedule=schedule, conversation_id=conversation.pk, turn_id=None, error=reason
        )
        return
    Schedule.objects.filter(pk=schedule.pk).update(
        last_turn=turn, last_status="started", last_error=""
    )
    # The turn's message went out before this was recorded: the page reloads its list of
    # schedules again, or it could keep the previous run (and miss this one's end).
    _schedules_changed(conversation.pk)
    schedule_fired(
        schedule=schedule,
        conversation_id=conversation.pk,
        turn_id=turn.pk if turn is not None else None,
        error="",
    )
    logger.info("schedule %s fired into conversation %s", schedule.name, conversation.pk)


def _schedules_changed(conversation_id: int) -> None:
    from infra.events import conversation_group, publish

    publish([conversation_group(conversation_id)], {"type": "schedules"}, wait=False)


def _notice(conversation_id: int, text: str) -> None:
    from chat_app.events import message_publish
    from chat_app.models import Message

    message = Message.objects.create(
        conversation_id=conversation_id, role=Message.Role.NOTICE, content=text
    )
    message_publish(message, calls=[])
