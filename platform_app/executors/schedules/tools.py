from __future__ import annotations

from pydantic import Field, field_validator

from platform_app.executors.schedules.settings import SchedulesSettings
from platform_app.schedules import (
    CRON_HELP,
    CronInvalid,
    conversation_owned,
    cron_check,
    quota_check,
)
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 _.:-]*$"


def needs_user(ctx: BindContext) -> int:
    if ctx.user_id is None:
        raise PolicyDenied("schedules belong to a user; this call has none")
    return ctx.user_id


def check_model(model: str | None, allowed: list[str], *, conversation_id: int | None) -> None:
    """A schedule's or a subagent's own model: one the group's settings list or, when they
    list none, one the provider of the turn's conversation allows (never any name)."""
    if not model:
        return
    if not allowed:
        from chat_app.services.providers import models_allowed

        allowed = models_allowed(conversation_id=conversation_id)
    if model not in allowed:
        raise PolicyDenied(
            f"model {model!r} is not allowed (allowed: {', '.join(allowed) or 'none'})"
        )


class ScheduleAdd(BaseTool[SchedulesSettings], group="schedules"):
    """Schedule a recurring task. At each time the cron expression names, `message` is sent
    to the agent as the user (with this conversation's agent and tools), and the answer is
    posted into the conversation `inject_into` (an id of one of the user's conversations) or,
    when it is null, into a new conversation each time."""

    name: str = Field(
        min_length=1,
        max_length=100,
        pattern=NAME_PATTERN,
        description="A unique name for the schedule (letters, digits, space _ . : -).",
        examples=["morning-briefing"],
    )
    cron: str = Field(
        min_length=1,
        max_length=120,
        description=f"When it fires: {CRON_HELP}.",
        examples=["0 9 * * 1-5"],
    )
    message: str = Field(
        min_length=1,
        description="What the agent is asked each time, self-contained.",
        examples=["Summarise what changed in my memory since yesterday."],
    )
    model: str | None = Field(
        None, max_length=200, description="A model name for these turns; null: the agent's."
    )
    inject_into: int | None = Field(
        None,
        ge=1,
        description="The conversation id the answers go to; null: a new conversation each time.",
    )

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            return cron_check(value)
        except CronInvalid as exc:
            raise ValueError(str(exc)) from exc

    def check_policy(self, settings: SchedulesSettings, ctx: BindContext) -> None:
        user_id = needs_user(ctx)
        if len(self.message) > settings.max_message_chars:
            raise PolicyDenied(
                f"the message is {len(self.message):,} characters; "
                f"the limit is {settings.max_message_chars:,}"
            )
        try:
            cron_check(
                self.cron, tz=settings.timezone, min_interval_minutes=settings.min_interval_minutes
            )
        except CronInvalid as exc:
            raise PolicyDenied(str(exc)) from exc
        if self.inject_into is not None:
            conversation_owned(conversation_id=self.inject_into, user_id=user_id)
        check_model(
            self.model,
            settings.allowed_models,
            conversation_id=self.inject_into or ctx.conversation_id,
        )
        quota_check(user_id=user_id, limit=settings.max_per_user)


class ScheduleList(BaseTool[SchedulesSettings], group="schedules"):
    """List the user's schedules: name, cron expression (and in words), message, target
    conversation, next and last run."""

    def check_policy(self, settings: SchedulesSettings, ctx: BindContext) -> None:
        needs_user(ctx)


class ScheduleRemove(BaseTool[SchedulesSettings], group="schedules"):
    """Remove one of the user's schedules by name; it will not fire again."""

    name: str = Field(
        min_length=1,
        max_length=100,
        description="The schedule's name, as schedule_list shows it.",
        examples=["morning-briefing"],
    )

    def check_policy(self, settings: SchedulesSettings, ctx: BindContext) -> None:
        needs_user(ctx)
