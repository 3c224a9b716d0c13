"""Quotas: budgets of tokens, cost and tool calls, per group with per-person overrides.

A group's quota is shared by its members (Everyone's by every user); a person's replaces, for
them, the group quotas of the same measure and period (an empty limit: none at all). Days
start at 00:00 UTC, months on the 1st. Checked in the two places every way in passes:

- before every model round (``round_gate``, registered into chat_app's loop): tokens and cost;
- when a tool call is bound (``call_gate``, registered into tools_app's binding): tool calls.

A refusal ends the turn (or refuses the call) with words that say whose budget, how much and
when it resets, writes an audit record and counts in ``cc_quota_refusals_total``. Which quotas
apply to whom is kept per configuration token (quotas and memberships move it), so a person
without any quota costs binding one dictionary lookup.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, Sum
from django.utils.formats import date_format, number_format
from django.utils.translation import gettext, ngettext

from chat_app.models import Turn, UsageRecord, UsageRecordGroup
from chat_app.services.usage import user_group_ids
from infra import metrics
from platform_app.models import Quota
from tools_app import selectors
from tools_app.models import AuditRecord, ToolCall
from tools_app.services.grants import EVERYONE

ROUND_METRICS = (Quota.Metric.TOKENS, Quota.Metric.COST)


@dataclass(frozen=True)
class Applicable:
    """A quota as it applies to one person: whose it is, and its limit."""

    quota_id: int
    metric: str
    period: str
    limit: Decimal
    group_id: int | None  # None: the person's own
    group_name: str
    everyone: bool


# --- periods ---------------------------------------------------------------------------------
def period_start(period: str, now: datetime | None = None) -> datetime:
    now = (now or datetime.now(UTC)).astimezone(UTC)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    return day.replace(day=1) if period == Quota.Period.MONTH else day


def period_end(period: str, now: datetime | None = None) -> datetime:
    start = period_start(period, now)
    if period == Quota.Period.MONTH:
        return (start + timedelta(days=32)).replace(day=1)
    return start + timedelta(days=1)


def resets_text(period: str, now: datetime | None = None) -> str:
    if period == Quota.Period.MONTH:
        return f"it resets on {period_end(period, now):%-d %B} at 00:00 UTC"
    return "it resets at 00:00 UTC"


# --- which apply -------------------------------------------------------------------------------
_lock = threading.Lock()
_token: str | None = None
_people: dict[int, tuple[Applicable, ...]] = {}
_any: bool | None = None  # whether any quota with a limit exists, under ``_token``


def applicable_quotas(user_id: int | None) -> tuple[Applicable, ...]:
    """The quotas that bind this person now (from memory while the token stands). With no
    quota anywhere (most deployments), one indexed read per token, not one per person."""
    global _token, _any
    if user_id is None:
        return ()
    token = selectors.config_snapshot().token
    with _lock:
        if token is not None and token == _token:
            if _any is False:
                return ()
            if user_id in _people:
                return _people[user_id]
    if token is None or token != _token or _any is None:
        anywhere = Quota.objects.filter(limit__isnull=False).exists()
        if token is not None:
            with _lock:
                if token != _token:
                    _token = token
                    _people.clear()
                _any = anywhere
        if not anywhere:
            return ()
    found = _compute(user_id)
    if token is not None:
        with _lock:
            if token != _token:
                _token = token
                _any = None
                _people.clear()
            if len(_people) > 20_000:
                _people.clear()
            _people[user_id] = found
    return found


def _compute(user_id: int) -> tuple[Applicable, ...]:
    groups = user_group_ids(user_id)
    rows = list(
        Quota.objects.filter(Q(user_id=user_id) | Q(group_id__in=groups))
        .select_related("group")
        .order_by("metric", "period", "pk")
    )
    own = {(q.metric, q.period) for q in rows if q.user_id is not None}
    out = []
    for q in rows:
        if q.user_id is None and (q.metric, q.period) in own:
            continue  # the person's own quota replaces the groups' for this measure
        if q.limit is None:
            continue  # a person's "no limit"
        name = q.group.name if q.group is not None else ""
        out.append(
            Applicable(
                quota_id=q.pk,
                metric=q.metric,
                period=q.period,
                limit=q.limit,
                group_id=q.group_id,
                group_name=name,
                everyone=name == EVERYONE,
            )
        )
    return tuple(out)


def quotas_forget() -> None:
    global _token, _any
    with _lock:
        _token = None
        _any = None
        _people.clear()


# --- how much is used --------------------------------------------------------------------------
def used(quota: Applicable, *, user_id: int, now: datetime | None = None) -> Decimal:
    """What counts against ``quota`` so far this period."""
    since = period_start(quota.period, now)
    if quota.metric == Quota.Metric.TOOL_CALLS:
        calls = ToolCall.objects.filter(
            created_at__gte=since, policy_verdict="allowed", imported=False
        )
        if quota.group_id is None:
            calls = calls.filter(user_id=user_id)
        elif not quota.everyone:
            calls = calls.filter(user__groups__pk=quota.group_id)
        return Decimal(calls.order_by().aggregate(n=Count("pk"))["n"] or 0)
    if quota.group_id is None:
        rows = UsageRecord.objects.filter(user_id=user_id, created_at__gte=since)
        totals = rows.order_by().aggregate(
            i=Sum("input_tokens"), o=Sum("output_tokens"), c=Sum("cost")
        )
        if quota.metric == Quota.Metric.COST:
            return Decimal(totals["c"] or 0)
        return Decimal((totals["i"] or 0) + (totals["o"] or 0))
    shares = UsageRecordGroup.objects.filter(group_id=quota.group_id, created_at__gte=since)
    field = "cost" if quota.metric == Quota.Metric.COST else "tokens"
    return Decimal(shares.order_by().aggregate(v=Sum(field))["v"] or 0)


def amount_text(metric: str, value: Decimal) -> str:
    if metric == Quota.Metric.COST:
        if value == value.to_integral():
            return f"${value.normalize():f}"
        return f"${value:.4f}" if 0 < value < Decimal("0.01") else f"${value:.2f}"
    noun = "tool calls" if metric == Quota.Metric.TOOL_CALLS else "tokens"
    return f"{int(value):,} {noun}"


def refusal_text(quota: Applicable, now: datetime | None = None) -> str:
    whose = (
        "your"
        if quota.group_id is None
        else ("everyone's" if quota.everyone else f"the {quota.group_name} group's")
    )
    span = "daily" if quota.period == Quota.Period.DAY else "monthly"
    kind = "limit" if quota.metric == Quota.Metric.TOOL_CALLS else "budget"
    limit = amount_text(quota.metric, quota.limit)
    return f"{whose} {span} {kind} of {limit} is used up; {resets_text(quota.period, now)}"


def refusal_words(quota: Applicable, now: datetime | None = None) -> str:
    """``refusal_text`` in the active language (a conversation's notice); the audit record
    keeps ``refusal_text`` itself."""
    what = {
        (Quota.Period.DAY, False): gettext("daily budget"),
        (Quota.Period.MONTH, False): gettext("monthly budget"),
        (Quota.Period.DAY, True): gettext("daily limit"),
        (Quota.Period.MONTH, True): gettext("monthly limit"),
    }[
        (
            Quota.Period.DAY if quota.period == Quota.Period.DAY else Quota.Period.MONTH,
            quota.metric == Quota.Metric.TOOL_CALLS,
        )
    ]
    if quota.group_id is None:
        subject = gettext("your %(what)s") % {"what": what}
    elif quota.everyone:
        subject = gettext("everyone's %(what)s") % {"what": what}
    else:
        subject = gettext("the %(group)s group's %(what)s") % {
            "group": quota.group_name,
            "what": what,
        }
    if quota.metric == Quota.Metric.COST:
        limit = amount_text(quota.metric, quota.limit)
    else:
        count = int(quota.limit)
        template = (
            ngettext("%(count)s tool call", "%(count)s tool calls", count)
            if quota.metric == Quota.Metric.TOOL_CALLS
            else ngettext("%(count)s token", "%(count)s tokens", count)
        )
        limit = template % {"count": number_format(count, force_grouping=True)}
    if quota.period == Quota.Period.MONTH:
        # "E": the month as a date says it ("1 декабря" in Russian).
        resets = gettext("it resets on %(date)s at 00:00 UTC") % {
            "date": date_format(period_end(quota.period, now), "j E")
        }
    else:
        resets = gettext("it resets at 00:00 UTC")
    return gettext("%(subject)s of %(limit)s is used up; %(resets)s") % {
        "subject": subject,
        "limit": limit,
        "resets": resets,
    }


def exhausted(
    user_id: int, metrics_wanted: tuple[str, ...], *, now: datetime | None = None
) -> tuple[Applicable, Decimal] | None:
    for quota in applicable_quotas(user_id):
        if quota.metric not in metrics_wanted:
            continue
        spent = used(quota, user_id=user_id, now=now)
        if spent >= quota.limit:
            return quota, spent
    return None


def _audit(
    *, user_id: int | None, what: str, quota: Applicable, spent: Decimal, **extra: Any
) -> None:
    from django.contrib.auth import get_user_model

    username = (
        get_user_model().objects.filter(pk=user_id).values_list("username", flat=True).first()
        if user_id
        else ""
    )
    AuditRecord.objects.create(
        kind=AuditRecord.Kind.QUOTA,
        user_id=user_id,
        username=username or "",
        status="refused",
        error=refusal_text(quota),
        detail={
            "what": what,
            "quota": quota.quota_id,
            "scope": "person" if quota.group_id is None else f"group {quota.group_name}",
            "metric": quota.metric,
            "period": quota.period,
            "limit": str(quota.limit),
            "used": str(spent),
            "resets_at": period_end(quota.period).isoformat(),
            **extra,
        },
        **{k: v for k, v in extra.items() if k in ("conversation_id", "source", "tool", "group")},
    )
    metrics.QUOTA_REFUSALS.labels(what, quota.metric).inc()


# --- the two gates -------------------------------------------------------------------------------
def round_gate(turn: Turn) -> str | None:
    """Before a model round: a token or cost budget of the turn's person that is used up."""
    if turn.user_id is None or not applicable_quotas(turn.user_id):
        return None
    found = exhausted(turn.user_id, ROUND_METRICS)
    if found is None:
        return None
    quota, spent = found
    text = refusal_words(quota)  # the person reads it in the conversation's language
    _audit(
        user_id=turn.user_id,
        what="model round",
        quota=quota,
        spent=spent,
        conversation_id=turn.conversation_id,
        source=turn.source,
        turn=turn.pk,
    )
    return text[:1].upper() + text[1:]


def call_gate(call: ToolCall) -> str | None:
    """When a call that would run is bound: a tool-call limit of its person that is reached."""
    if call.user_id is None or not applicable_quotas(call.user_id):
        return None
    found = exhausted(call.user_id, (Quota.Metric.TOOL_CALLS,))
    if found is None:
        return None
    quota, spent = found
    metrics.QUOTA_REFUSALS.labels("tool call", quota.metric).inc()
    text = refusal_text(quota)
    return f"quota: {text}"
