"""The Usage page (everyone: admins see everyone's figures, others their own), its CSV, and
the admins' page of quotas and prices. Views parse, call a selector or a service, render."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chat_app.models import ModelPrice
from infra import access
from platform_app.models import Quota
from platform_app.usage import selectors, services
from platform_app.usage.forms import PriceForm, QuotaForm
from platform_app.usage.quotas import EVERYONE


@access.signed_in
def usage_page(request: HttpRequest) -> HttpResponse:
    period = selectors.range_from(request.GET)
    report = selectors.usage_report(request.user, period)
    context = {
        "report": report,
        "period": period,
        "presets": selectors.PRESETS,
        "charts": report.chart_data(),
        "query": f"from={period.start.isoformat()}&to={period.end.isoformat()}",
    }
    return render(request, "usage/usage.html", context)


@access.signed_in
def usage_export(request: HttpRequest) -> StreamingHttpResponse:
    period = selectors.range_from(request.GET)
    what = "tools" if request.GET.get("what") == "tools" else "rounds"
    response = StreamingHttpResponse(
        services.csv_rows(request.user, period, what), content_type="text/csv; charset=utf-8"
    )
    name = f"usage-{what}-{period.start.isoformat()}-{period.end.isoformat()}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _targets() -> list[tuple[str, str]]:
    groups = [(f"group:{g.pk}", f"Group: {g.name}") for g in Group.objects.order_by("name")]
    people = [
        (f"user:{u.pk}", f"Person: {u.get_username()}")
        for u in get_user_model().objects.filter(is_active=True).order_by("username")
    ]
    return groups + people


@access.staff
@require_http_methods(["GET", "POST"])
def limits_page(request: HttpRequest) -> HttpResponse:
    quota_form = QuotaForm(targets=_targets(), prefix="quota")
    price_form = PriceForm(prefix="price")
    if request.method == "POST" and "quota-target" in request.POST:
        quota_form = QuotaForm(request.POST, targets=_targets(), prefix="quota")
        if quota_form.is_valid() and _saved(request, _quota_save, quota_form.cleaned_data):
            return redirect("usage:limits")
    elif request.method == "POST":
        price_form = PriceForm(request.POST, prefix="price")
        if price_form.is_valid() and _saved(request, _price_save, price_form.cleaned_data):
            return redirect("usage:limits")
    context = {
        "quota_form": quota_form,
        "price_form": price_form,
        "quotas": selectors.quota_rows(request.user),
        "prices": ModelPrice.objects.select_related("provider"),
        "everyone": EVERYONE,
    }
    return render(request, "usage/limits.html", context)


def _saved(request: HttpRequest, save: Any, data: dict[str, Any]) -> bool:
    try:
        message = save(request, data)
    except services.UsageError as exc:
        messages.error(request, str(exc))
        return False
    messages.success(request, message)
    return True


def _quota_save(request: HttpRequest, data: dict[str, Any]) -> str:
    quota = services.quota_set(
        actor=request.user,
        target=data["target"],
        metric=data["metric"],
        period=data["period"],
        limit=data["limit"],
    )
    return f"Quota saved: {quota.get_metric_display()} {quota.get_period_display()}."


def _price_save(request: HttpRequest, data: dict[str, Any]) -> str:
    price = services.price_set(actor=request.user, **data)
    return f"Price saved for {price.model}."


@access.staff
@require_POST
def quota_delete(request: HttpRequest, quota_id: int) -> HttpResponse:
    services.quota_delete(actor=request.user, quota=get_object_or_404(Quota, pk=quota_id))
    messages.success(request, _("Quota removed."))
    return redirect("usage:limits")


@access.staff
@require_POST
def price_delete(request: HttpRequest, price_id: int) -> HttpResponse:
    services.price_delete(actor=request.user, price=get_object_or_404(ModelPrice, pk=price_id))
    messages.success(request, _("Price removed."))
    return redirect("usage:limits")
