"""Pre-approved schedules: which calls a schedule's unattended runs may make without
waiting (tools_app.services.preapproval holds the grants and who may make them).

A pre-approval is bound to the schedule's id and to ``schedule_hash``: what the schedule
asks — its owner, message, model, agent and target conversation (and that conversation's
agent). Changing any of them voids it: the schedule's next runs wait as before until an
approver pre-approves again. Binding learns which schedule a call runs for from its turn
(``Turn.schedule_id``, set when the firing makes the turn) through ``schedule_of_call``,
registered at ready().
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from infra import access
from platform_app.models import Schedule
from tools_app.models import StandingApproval, ToolCall, ToolFunctionConfig
from tools_app.services.approval import decider_group_ids
from tools_app.services.preapproval import (
    Preapproval,
    preapprovals_parse,
    schedule_preapprovals,
    schedule_preapprovals_void,
    schedule_preapprove,
)

__all__ = [
    "Preapproval",
    "preapprovals_parse",
    "schedule_deleted",
    "schedule_hash",
    "schedule_of_call",
    "schedule_preapprovals",
    "schedule_preapprovals_shown",
    "schedule_preapprove_for",
    "schedule_for_approver",
    "schedules_for_approver",
    "schedule_names",
]


def schedule_hash(schedule: Schedule) -> str:
    """What a pre-approval approved, as a hash: a change to any of it voids the grant."""
    from chat_app.models import Conversation

    target_agent = None
    if schedule.inject_into_id is not None:
        target_agent = (
            Conversation.objects.filter(pk=schedule.inject_into_id)
            .values_list("agent_id", flat=True)
            .first()
        )
    asked = {
        "owner": schedule.user_id,
        "message": schedule.message,
        "model": schedule.model,
        "agent": schedule.agent_id,
        "inject_into": schedule.inject_into_id,
        "target_agent": target_agent,
    }
    return hashlib.sha256(
        json.dumps(asked, sort_keys=True, ensure_ascii=False).encode("utf-8")
    ).hexdigest()


def schedule_of_call(call: ToolCall) -> tuple[int, str] | None:
    """The schedule ``call`` runs for (from its turn) and its hash now; None otherwise."""
    from chat_app.models import Turn

    if call.turn_id is None or call.user_id is None:
        return None
    schedule_id = (
        Turn.objects.filter(pk=call.turn_id, user_id=call.user_id)
        .values_list("schedule_id", flat=True)
        .first()
    )
    if schedule_id is None:
        return None
    schedule = Schedule.objects.filter(pk=schedule_id, user_id=call.user_id).first()
    if schedule is None:
        return None
    return schedule.pk, schedule_hash(schedule)


def schedule_preapprove_for(
    *, schedule: Schedule, approver: Any, data: Any
) -> list[StandingApproval]:
    """Pre-approve the calls ``data`` lists (as posted) for ``schedule``'s runs, as
    ``approver``: all or none, WideningError (an ApprovalError) with clear words."""
    items = preapprovals_parse(data)
    if not items:
        return []
    return schedule_preapprove(
        approver=approver,
        owner_id=schedule.user_id,
        schedule=(schedule.pk, schedule_hash(schedule)),
        items=items,
    )


def schedule_for_approver(*, user: Any, schedule_id: int) -> Schedule | None:
    """A schedule another person's approver may pre-approve calls for: theirs, or (an
    approver of some group, an admin) anyone's. Whether they may pre-approve a given
    function is decided per function (``preapproval_check``); ids reveal nothing more."""
    schedule = Schedule.objects.filter(pk=schedule_id).first()
    if schedule is None:
        return None
    allowed = access.schedule_preapprovable(
        user, owner_id=schedule.user_id, approves_something=lambda: _approves_something(user)
    )
    return schedule if allowed else None


def schedules_for_approver(user: Any, *, limit: int = 200) -> list[Schedule]:
    """Other people's schedules this person may pre-approve calls for (Approvals →
    Schedules): an admin's or an approver's view; nobody else's."""
    if not access.schedule_preapprovable(
        user, owner_id=None, approves_something=lambda: _approves_something(user)
    ):
        return []
    others = Schedule.objects.exclude(user_id=user.pk).select_related("user")
    return list(others.order_by("user__username", "name", "pk")[:limit])


def schedule_names(ids: list[int]) -> dict[int, str]:
    """Schedule id → name, for the pages that list pre-approvals (a grant keeps the id)."""
    return dict(Schedule.objects.filter(pk__in=set(ids)).values_list("pk", "name"))


def _approves_something(user: Any) -> bool:
    return ToolFunctionConfig.objects.filter(
        approval_mode="approver", approver_groups__in=decider_group_ids(user)
    ).exists()


def schedule_preapprovals_shown(schedule: Schedule) -> list[StandingApproval]:
    """The schedule's pre-approvals, each with ``current``: granted for the schedule as it
    is now (a changed one no longer matches; its runs wait again)."""
    now = schedule_hash(schedule)
    grants = schedule_preapprovals(schedule.pk)
    for grant in grants:
        grant.current = grant.schedule_hash == now  # type: ignore[attr-defined]
    return grants


def schedule_deleted(sender: Any, instance: Schedule, **kwargs: Any) -> None:
    """A deleted schedule's pre-approvals are revoked (kept, for the audit)."""
    schedule_preapprovals_void(instance.pk)
