"""Writes of the Usage pages: quotas and prices (admins only; each change audited), and the
CSV export."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from chat_app.models import ModelPrice, Provider
from platform_app.models import Quota
from platform_app.usage.selectors import Range, calls_for, rounds_for
from tools_app.services.audit import audit_settings_change


class UsageError(ValueError):
    """A change that cannot be made, with the sentence to show."""


def _quota_fields(quota: Quota) -> dict[str, Any]:
    return {
        "group": quota.group.name if quota.group else None,
        "user": quota.user.get_username() if quota.user else None,
        "metric": quota.metric,
        "period": quota.period,
        "limit": None if quota.limit is None else str(quota.limit),
    }


@transaction.atomic
def quota_set(*, actor: Any, target: str, metric: str, period: str, limit: Decimal | None) -> Quota:
    """Add or change the quota of ``target`` ("group:<id>" or "user:<id>") for this measure
    and period. Only a person's quota may have no limit (it exempts them)."""
    kind, _sep, raw = target.partition(":")
    group = Group.objects.filter(pk=int(raw)).first() if kind == "group" and raw.isdigit() else None
    user = (
        get_user_model().objects.filter(pk=int(raw)).first()
        if kind == "user" and raw.isdigit()
        else None
    )
    if group is None and user is None:
        raise UsageError(_("choose a group or a person"))
    if metric == Quota.Metric.TOOL_CALLS and period != Quota.Period.DAY:
        raise UsageError(_("tool calls are limited per day"))
    if limit is None and group is not None:
        raise UsageError(_("a group's quota needs a limit (an empty limit exempts one person)"))
    if limit is not None and metric != Quota.Metric.COST and limit != limit.to_integral():
        raise UsageError(_("tokens and tool calls are whole numbers"))
    quota = Quota.objects.filter(group=group, user=user, metric=metric, period=period).first()
    before = _quota_fields(quota) if quota else {}
    if quota is None:
        quota = Quota(group=group, user=user, metric=metric, period=period)
    quota.limit = limit
    try:
        quota.save()
    except IntegrityError as exc:
        raise UsageError(_("this quota cannot be stored: %(error)s") % {"error": exc}) from None
    audit_settings_change(
        user=actor, group="usage", tool="quota", before=before, after=_quota_fields(quota)
    )
    return quota


@transaction.atomic
def quota_delete(*, actor: Any, quota: Quota) -> None:
    before = _quota_fields(quota)
    quota.delete()
    audit_settings_change(user=actor, group="usage", tool="quota", before=before, after={})


def _price_fields(price: ModelPrice) -> dict[str, Any]:
    return {
        "provider": price.provider.name if price.provider else None,
        "model": price.model,
        "input_per_million": str(price.input_per_million),
        "output_per_million": str(price.output_per_million),
        "cached_per_million": None
        if price.cached_per_million is None
        else str(price.cached_per_million),
    }


@transaction.atomic
def price_set(
    *,
    actor: Any,
    provider: Provider | None,
    model: str,
    input_per_million: Decimal,
    output_per_million: Decimal,
    cached_per_million: Decimal | None,
) -> ModelPrice:
    model = model.strip()
    if not model:
        raise UsageError(_("name the model"))
    price = ModelPrice.objects.filter(provider=provider, model=model).first()
    before = _price_fields(price) if price else {}
    if price is None:
        price = ModelPrice(provider=provider, model=model)
    price.input_per_million = input_per_million
    price.output_per_million = output_per_million
    price.cached_per_million = cached_per_million
    price.save()
    audit_settings_change(
        user=actor, group="usage", tool="price", before=before, after=_price_fields(price)
    )
    return price


@transaction.atomic
def price_delete(*, actor: Any, price: ModelPrice) -> None:
    before = _price_fields(price)
    price.delete()
    audit_settings_change(user=actor, group="usage", tool="price", before=before, after={})


# --- CSV -------------------------------------------------------------------------------------
ROUND_COLUMNS = [
    "time_utc", "person", "groups", "source", "provider_kind", "model", "agent",
    "conversation_id", "input_tokens", "cached_tokens", "output_tokens", "estimated",
    "first_token_ms", "duration_ms", "cost_usd", "outcome",
]  # fmt: skip
CALL_COLUMNS = ["time_utc", "person", "tool", "group", "source", "status", "duration_ms"]


def _safe(value: Any) -> Any:
    """A cell a spreadsheet will not run as a formula (a name or a model may start with =)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def csv_rows(viewer: Any, period: Range, what: str) -> Iterator[str]:
    """The CSV, line by line (streamed): model rounds, or tool calls (``what="tools"``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def line(values: list[Any]) -> str:
        writer.writerow([_safe(v) for v in values])
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    if what == "tools":
        yield line(CALL_COLUMNS)
        calls = calls_for(viewer, period).select_related("user").order_by("created_at", "id")
        for call in calls.iterator(chunk_size=2000):
            yield line(
                [
                    call.created_at.isoformat(),
                    call.user.get_username() if call.user else "",
                    call.tool,
                    call.group,
                    call.source,
                    call.status,
                    call.duration_ms if call.duration_ms is not None else "",
                ]
            )
        return
    yield line(ROUND_COLUMNS)
    rounds = rounds_for(viewer, period).prefetch_related("groups").order_by("created_at", "id")
    for r in rounds.iterator(chunk_size=2000):
        yield line(
            [
                r.created_at.isoformat(),
                r.username,
                ";".join(sorted(g.name for g in r.groups.all())),
                r.source,
                r.provider_kind,
                r.model,
                r.agent_name,
                r.conversation_id or "",
                r.input_tokens,
                r.cached_tokens,
                r.output_tokens,
                "yes" if r.estimated else "no",
                "" if r.first_token_ms is None else r.first_token_ms,
                r.duration_ms,
                f"{r.cost:.6f}",
                r.outcome,
            ]
        )
