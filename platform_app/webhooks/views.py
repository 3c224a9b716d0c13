"""The Webhooks pages (staff only): register endpoints, see each one's deliveries and their
attempts, send a test, send a delivery again, rotate the secret (shown once), remove."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from infra import access
from platform_app.models import WebhookDelivery, WebhookEndpoint
from platform_app.webhooks import services

LOG_SIZE = 50


def _events() -> list[tuple[str, str]]:
    # The labels in the page's language (lazy in the model).
    return [(value, str(label)) for value, label in WebhookEndpoint.Event.choices]


def _form(request: HttpRequest) -> dict[str, Any]:
    return {
        "name": request.POST.get("name", "").strip(),
        "url": request.POST.get("url", "").strip()[:500],
        "events": request.POST.getlist("events"),
        "allow_private": request.POST.get("allow_private") == "on",
    }


def _shown_once(request: HttpRequest, endpoint: WebhookEndpoint, secret: str) -> HttpResponse:
    request.session["webhook_secret"] = {"endpoint": endpoint.pk, "secret": secret}
    return redirect("platform:webhook", endpoint_id=endpoint.pk)


@access.staff
@require_http_methods(["GET", "POST"])
def webhook_list(request: HttpRequest) -> HttpResponse:
    form: dict[str, Any] = {"events": [], "allow_private": False}
    status = 200
    if request.method == "POST":
        form = _form(request)
        try:
            endpoint, secret = services.endpoint_create(user=request.user, **form)
        except services.WebhookError as exc:
            messages.error(request, str(exc))
            status = 400
        else:
            messages.success(request, _("Webhook “%(name)s” added.") % {"name": endpoint.name})
            return _shown_once(request, endpoint, secret)
    endpoints = list(WebhookEndpoint.objects.all())
    for endpoint in endpoints:
        endpoint.latest = endpoint.deliveries.first()  # type: ignore[attr-defined]
    context = {"endpoints": endpoints, "events": _events(), "form": form}
    return render(request, "platform/webhooks.html", context, status=status)


def _endpoint(endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id).first()
    if endpoint is None:
        raise Http404("no such webhook")
    return endpoint


@access.staff
@require_http_methods(["GET", "POST"])
def webhook_detail(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    status = 200
    if request.method == "POST":
        form = _form(request)
        try:
            services.endpoint_update(endpoint, enabled=request.POST.get("enabled") == "on", **form)
        except services.WebhookError as exc:
            messages.error(request, str(exc))
            status = 400
        else:
            messages.success(request, _("Saved."))
            return redirect("platform:webhook", endpoint_id=endpoint.pk)
    once = request.session.pop("webhook_secret", None)
    secret = once["secret"] if once and once.get("endpoint") == endpoint.pk else None
    deliveries = endpoint.deliveries.prefetch_related("attempt_log")[:LOG_SIZE]
    context = {
        "endpoint": endpoint,
        "events": _events(),
        "deliveries": deliveries,
        "secret": secret,
        "log_size": LOG_SIZE,
    }
    response = render(request, "platform/webhook.html", context, status=status)
    if secret:
        response["Cache-Control"] = "no-store"
    return response


@access.staff
@require_POST
def webhook_action(request: HttpRequest, endpoint_id: int, action: str) -> HttpResponse:
    endpoint = _endpoint(endpoint_id)
    if action == "rotate":
        secret = services.endpoint_rotate_secret(endpoint)
        messages.success(request, _("A new secret: the old one no longer signs anything."))
        return _shown_once(request, endpoint, secret)
    if action == "test":
        services.endpoint_ping(endpoint)
        messages.success(request, _("A test delivery (event “ping”) is on its way."))
    elif action == "delete":
        name = endpoint.name
        endpoint.delete()
        messages.success(
            request, _("Webhook “%(name)s” removed, with its delivery log.") % {"name": name}
        )
        return redirect("platform:webhooks")
    else:
        raise Http404("unknown action")
    return redirect("platform:webhook", endpoint_id=endpoint.pk)


@access.staff
@require_POST
def delivery_again(request: HttpRequest, delivery_id: int) -> HttpResponse:
    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if delivery is None:
        raise Http404("no such delivery")
    services.delivery_redeliver(delivery)
    messages.success(
        request, _("“%(event)s” is sent again as a new delivery.") % {"event": delivery.event}
    )
    return redirect("platform:webhook", endpoint_id=delivery.endpoint_id)
