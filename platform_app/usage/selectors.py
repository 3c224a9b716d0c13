"""What the Usage page and its CSV show: model rounds and tool calls over a range of days,
totalled and broken down by day, person, group, model, agent and tool.

Admins (staff) see everyone; anyone else sees their own rounds and calls only — the scope is
applied here, to every figure, not in the template. Days are UTC days, as the quotas'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import Group
from django.db.models import Avg, Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django.utils.translation import gettext_lazy as _

from chat_app.models import UsageRecord, UsageRecordGroup
from platform_app.models import Quota
from platform_app.usage import quotas as quota_rules
from tools_app.models import AuditRecord, ToolCall

MAX_DAYS = 366
PRESETS = {
    "7": _("Last 7 days"),
    "30": _("Last 30 days"),
    "90": _("Last 90 days"),
    "month": _("This month"),
}
_FAILED = (ToolCall.Status.FAILED, ToolCall.Status.DENIED)


@dataclass
class Range:
    start: date  # first day, inclusive (UTC)
    end: date  # last day, inclusive
    preset: str = ""

    @property
    def since(self) -> datetime:
        return datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC)

    @property
    def until(self) -> datetime:
        return datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC) + timedelta(days=1)

    @property
    def days(self) -> list[date]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days + 1)]


def range_from(params: Any, *, today: date | None = None) -> Range:
    """The range the query string asks for (``range`` preset, or ``from``/``to`` dates);
    nonsense falls back to the last 30 days, and a range is at most a year."""
    today = today or datetime.now(UTC).date()
    preset = str(params.get("range") or "")
    if preset in ("7", "30", "90"):
        return Range(today - timedelta(days=int(preset) - 1), today, preset)
    if preset == "month":
        return Range(today.replace(day=1), today, preset)
    try:
        start = date.fromisoformat(str(params.get("from") or ""))
        end = date.fromisoformat(str(params.get("to") or ""))
    except ValueError:
        return Range(today - timedelta(days=29), today, "30")
    if end < start:
        start, end = end, start
    end = min(end, today + timedelta(days=1))
    start = max(start, end - timedelta(days=MAX_DAYS - 1))
    return Range(start, end)


def rounds_for(viewer: Any, period: Range) -> QuerySet[UsageRecord]:
    rows = UsageRecord.objects.filter(created_at__gte=period.since, created_at__lt=period.until)
    return rows if viewer.is_staff else rows.filter(user_id=viewer.pk)


def calls_for(viewer: Any, period: Range) -> QuerySet[ToolCall]:
    rows = ToolCall.objects.filter(
        created_at__gte=period.since, created_at__lt=period.until, imported=False
    )
    return rows if viewer.is_staff else rows.filter(user_id=viewer.pk)


_SUMS = {
    "rounds": Count("pk"),
    "input_tokens": Sum("input_tokens"),
    "output_tokens": Sum("output_tokens"),
    "cached_tokens": Sum("cached_tokens"),
    "cost": Sum("cost"),
}


def _clean(values: Mapping[str, Any]) -> dict[str, Any]:
    row = dict(values)
    for key in ("input_tokens", "output_tokens", "cached_tokens", "rounds", "calls", "failed"):
        if key in row:
            row[key] = int(row[key] or 0)
    if "cost" in row:
        row["cost"] = Decimal(row["cost"] or 0).quantize(Decimal("0.000001"))
    if "input_tokens" in row:
        row["tokens"] = row["input_tokens"] + row["output_tokens"]
    return row


@dataclass
class UsageReport:
    period: Range
    everyone: bool
    totals: dict[str, Any]
    by_day: list[dict[str, Any]]
    by_model: list[dict[str, Any]]
    by_agent: list[dict[str, Any]]
    by_tool: list[dict[str, Any]]
    by_person: list[dict[str, Any]] = field(default_factory=list)
    by_group: list[dict[str, Any]] = field(default_factory=list)
    quotas: list[dict[str, Any]] = field(default_factory=list)
    refusals: list[AuditRecord] = field(default_factory=list)

    def chart_data(self) -> dict[str, Any]:
        """What the page's charts draw (json_script)."""

        def pick(rows: list[dict[str, Any]], label: str) -> dict[str, Any]:
            return {
                "labels": [r[label] or "—" for r in rows],
                "tokens": [r["tokens"] for r in rows],
                "cost": [float(r["cost"]) for r in rows],
            }

        return {
            "days": {
                "labels": [r["day"].isoformat() for r in self.by_day],
                "input": [r["input_tokens"] for r in self.by_day],
                "output": [r["output_tokens"] for r in self.by_day],
                "cost": [float(r["cost"]) for r in self.by_day],
                "calls": [r["calls"] for r in self.by_day],
            },
            "people": pick(self.by_person, "username"),
            "groups": pick(self.by_group, "name"),
            "models": pick(self.by_model, "model"),
            "agents": pick(self.by_agent, "agent_name"),
            "tools": {
                "labels": [r["tool"] for r in self.by_tool],
                "calls": [r["calls"] - r["failed"] for r in self.by_tool],
                "failed": [r["failed"] for r in self.by_tool],
            },
        }


def usage_report(viewer: Any, period: Range, *, top: int = 12) -> UsageReport:
    rounds = rounds_for(viewer, period).order_by()
    calls = calls_for(viewer, period).order_by()
    totals = _clean(rounds.aggregate(**_SUMS, estimated=Count("pk", filter=Q(estimated=True))))
    totals["estimated"] = int(totals["estimated"] or 0)
    totals.update(
        _clean(calls.aggregate(calls=Count("pk"), failed=Count("pk", filter=Q(status__in=_FAILED))))
    )
    per_day = {
        r["day"]: _clean(r)
        for r in rounds.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day")
        .annotate(**_SUMS)
    }
    calls_per_day = dict(
        calls.annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    empty = {"rounds": 0, "input_tokens": 0, "output_tokens": 0, "cost": Decimal(0), "tokens": 0}
    by_day = [
        {**empty, **per_day.get(day, {}), "day": day, "calls": calls_per_day.get(day, 0)}
        for day in period.days
    ]
    by_model = [
        _clean(r)
        for r in rounds.values("model")
        .annotate(**_SUMS, first_token=Avg("first_token_ms"), duration=Avg("duration_ms"))
        .order_by("-cost", "-input_tokens")[:top]
    ]
    by_agent = [
        _clean(r)
        for r in rounds.values("agent_name")
        .annotate(**_SUMS)
        .order_by("-cost", "-input_tokens")[:top]
    ]
    by_tool = [
        _clean(r)
        for r in calls.values("tool")
        .annotate(
            calls=Count("pk"),
            failed=Count("pk", filter=Q(status__in=_FAILED)),
            duration=Avg("duration_ms", filter=Q(status=ToolCall.Status.SUCCEEDED)),
        )
        .order_by("-calls", "tool")[:top]
    ]
    report = UsageReport(period, viewer.is_staff, totals, by_day, by_model, by_agent, by_tool)
    if viewer.is_staff:
        report.by_person = _by_person(rounds, calls, top)
        report.by_group = [
            _clean(r)
            for r in UsageRecordGroup.objects.filter(
                created_at__gte=period.since, created_at__lt=period.until
            )
            .order_by()
            .values("group_id", "group__name")
            .annotate(rounds=Count("pk"), tokens=Sum("tokens"), cost=Sum("cost"))
            .order_by("-cost", "-tokens")[:top]
        ]
        for row in report.by_group:
            row["name"] = row.pop("group__name")
    report.quotas = quota_rows(viewer)
    refusals = AuditRecord.objects.filter(kind=AuditRecord.Kind.QUOTA, created_at__gte=period.since)
    if not viewer.is_staff:
        refusals = refusals.filter(user_id=viewer.pk)
    report.refusals = list(refusals.order_by("-created_at")[:10])
    return report


def _by_person(
    rounds: QuerySet[UsageRecord], calls: QuerySet[ToolCall], top: int
) -> list[dict[str, Any]]:
    rows = [
        _clean(r)
        for r in rounds.values("user_id", "username")
        .annotate(**_SUMS)
        .order_by("-cost", "-input_tokens")[:top]
    ]
    counts = dict(
        calls.filter(user_id__in=[r["user_id"] for r in rows])
        .values("user_id")
        .annotate(n=Count("pk"))
        .values_list("user_id", "n")
    )
    for row in rows:
        row["calls"] = counts.get(row["user_id"], 0)
        row["username"] = row["username"] or "(deleted)"
    return rows


def quota_rows(viewer: Any) -> list[dict[str, Any]]:
    """Every quota (admins) or those that bind the viewer, with what is used of each."""
    if viewer.is_staff:
        quotas = list(Quota.objects.select_related("group", "user"))
        rows = []
        for quota in quotas:
            if quota.limit is None:
                rows.append(_quota_row(quota, None))
                continue
            rule = quota_rules.Applicable(
                quota_id=quota.pk,
                metric=quota.metric,
                period=quota.period,
                limit=quota.limit,
                group_id=quota.group_id,
                group_name=quota.group.name if quota.group else "",
                everyone=bool(quota.group and quota.group.name == quota_rules.EVERYONE),
            )
            rows.append(_quota_row(quota, quota_rules.used(rule, user_id=quota.user_id or 0)))
        return rows
    mine = {q.quota_id: q for q in quota_rules.applicable_quotas(viewer.pk)}
    found = Quota.objects.select_related("group", "user").filter(pk__in=mine)
    return [_quota_row(q, quota_rules.used(mine[q.pk], user_id=viewer.pk)) for q in found]


def _quota_row(quota: Quota, spent: Decimal | None) -> dict[str, Any]:
    limit = quota.limit
    share = 0 if spent is None or not limit else min(100, int(spent * 100 / limit))
    return {
        "quota": quota,
        "who": quota.group.name
        if quota.group
        else (quota.user.get_username() if quota.user else ""),
        "is_group": quota.group_id is not None,
        "limit": "no limit" if limit is None else quota_rules.amount_text(quota.metric, limit),
        "used": "" if spent is None else quota_rules.amount_text(quota.metric, spent),
        "percent": share,
        "exhausted": spent is not None and limit is not None and spent >= limit,
        "resets": quota_rules.resets_text(quota.period),
    }


def group_choices() -> list[Group]:
    return list(Group.objects.order_by("name"))
