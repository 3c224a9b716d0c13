"""Webhooks: admins register endpoints for events; each event becomes one delivery per
subscribed endpoint, sent by a Celery task that owns its retries.

A delivery is a ``POST`` of JSON::

    {"id": "<delivery uuid>", "event": "turn.finished", "created_at": "<ISO 8601>",
     "data": {...}}

with the headers ``X-CC-Event``, ``X-CC-Delivery`` (the id), ``X-CC-Timestamp`` (Unix
seconds) and ``X-CC-Signature: t=<timestamp>,v1=<hex>``, where ``<hex>`` is
HMAC-SHA256(secret, "<timestamp>." + body). A receiver recomputes it over the raw body,
compares in constant time, and refuses an old timestamp (replays).

Delivery goes through the HTTP tool's SSRF-guarded client: no loopback, private, link-local
or metadata address unless the admin allowed a private host for this endpoint (metadata
never), redirects are not followed (a 3xx is not delivered). A 2xx is delivered; a 5xx, 408,
425, 429 or a network failure is tried again after 30 s, 60 s, 120 s… (``WEBHOOK_*``
settings) up to ``WEBHOOK_MAX_ATTEMPTS``; any other answer, or a refusal by the guard, fails
at once. Every attempt is logged.

Payloads carry ids, names and statuses, never a conversation's text: a conversation is its
owner's, and an admin's endpoint is not its owner (fetch it with the owner's token).
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from infra.signing import signature
from platform_app.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from tools_app.errors import NetworkError, PolicyDenied
from tools_app.netguard import check_url
from tools_app.selectors import config_memo

logger = logging.getLogger(__name__)

DELIVER_TASK = "platform_app.tasks.webhook_deliver"
SECRET_PREFIX = "whsec_"  # noqa: S105 - the prefix of generated secrets, not one
RETRIED_STATUSES = {408, 425, 429}
USER_AGENT = "ControlCenter-Webhooks/1"


class WebhookError(ValueError):
    """An endpoint cannot be saved as asked (the words say why)."""


def secret_new() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature_valid(
    secret: str, header: str, body: bytes, *, now: float | None = None, tolerance: int = 300
) -> bool:
    """What a receiver does (and the docs show): recompute, compare in constant time, and
    refuse a timestamp older than ``tolerance`` seconds."""
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    try:
        timestamp = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs((now or time.time()) - timestamp) > tolerance:
        return False
    expected = signature(secret, timestamp, body).split("v1=", 1)[1]
    return hmac.compare_digest(expected, parts.get("v1", ""))


# --- endpoints --------------------------------------------------------------------------------
def _check(url: str, events: list[str], *, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError(_("the URL must be http:// or https:// with a host"))
    if parts.username or parts.password:
        raise WebhookError(_("credentials in the URL are not allowed; the signature authenticates"))
    _check_host(url, parts.hostname, allow_private=allow_private)
    unknown = sorted(set(events) - set(WebhookEndpoint.Event.values))
    if unknown:
        raise WebhookError(_("unknown event %(unknown)s") % {"unknown": f"{unknown[0]!r}"})
    if not events:
        raise WebhookError(_("choose at least one event"))


def _check_host(url: str, host: str, *, allow_private: bool) -> None:
    """The delivery's own SSRF guard, asked at save: an endpoint it would refuse is not saved
    (a name that does not resolve now is saved; delivery asks again every time)."""
    try:
        check_url(url, private_allowed=[host] if allow_private else [])
    except NetworkError:
        return
    except PolicyDenied as exc:
        if not allow_private:
            try:
                check_url(url, private_allowed=[host])
            except (NetworkError, PolicyDenied):
                pass
            else:
                raise WebhookError(
                    _(
                        "%(host)s is a private or loopback host: deliveries to it are refused "
                        "unless “Allow a private or loopback host” is ticked"
                    )
                    % {"host": host}
                ) from None
        raise WebhookError(
            _("deliveries to this URL would be refused: %(reason)s") % {"reason": exc.reason}
        ) from None


def endpoint_create(
    *, user: Any, name: str, url: str, events: list[str], allow_private: bool = False
) -> tuple[WebhookEndpoint, str]:
    """A new endpoint and its secret (shown once to the admin; kept encrypted to sign)."""
    _check(url, events, allow_private=allow_private)
    secret = secret_new()
    endpoint = WebhookEndpoint.objects.create(
        name=name.strip()[:100] or urlsplit(url).hostname or "webhook",
        url=url,
        secret=secret,
        events=[e for e in WebhookEndpoint.Event.values if e in events],
        allow_private=allow_private,
        created_by=user if getattr(user, "pk", None) else None,
    )
    return endpoint, secret


def endpoint_update(
    endpoint: WebhookEndpoint,
    *,
    name: str,
    url: str,
    events: list[str],
    enabled: bool,
    allow_private: bool,
) -> WebhookEndpoint:
    _check(url, events, allow_private=allow_private)
    endpoint.name = name.strip()[:100] or endpoint.name
    endpoint.url = url
    endpoint.events = [e for e in WebhookEndpoint.Event.values if e in events]
    endpoint.enabled = enabled
    endpoint.allow_private = allow_private
    endpoint.save()
    return endpoint


def endpoint_rotate_secret(endpoint: WebhookEndpoint) -> str:
    secret = secret_new()
    endpoint.secret = secret
    endpoint.save(update_fields=["secret", "updated_at"])
    return secret


# --- events -----------------------------------------------------------------------------------
def _subscribed() -> list[tuple[int, list[str]]]:
    """(endpoint id, events) of the enabled endpoints; kept under the configuration token
    inside a model round (writes to endpoints move it on: ``platform_app.apps``)."""
    return config_memo(
        ("webhooks",),
        lambda: list(
            WebhookEndpoint.objects.filter(enabled=True).order_by().values_list("id", "events")
        ),
    )


def webhook_emit(event: str, data: Callable[[], dict[str, Any]]) -> int:
    """Queue ``event`` for every enabled endpoint subscribed to it (after the caller's
    transaction commits); the number queued. ``data`` builds the payload, only when someone
    listens. Never raises: an event is a notice."""
    try:
        targets = [pk for pk, events in _subscribed() if event in (events or [])]
        if not targets:
            return 0
        payload = data()
        deliveries = WebhookDelivery.objects.bulk_create(
            [
                WebhookDelivery(endpoint_id=pk, event=event, event_id=uuid.uuid4(), payload=payload)
                for pk in targets
            ]
        )
        for delivery in deliveries:
            transaction.on_commit(partial(delivery_send, delivery.pk))
        return len(deliveries)
    except Exception:
        logger.exception("webhook event %s could not be queued", event)
        return 0


def delivery_send(delivery_id: int, *, countdown: float | None = None) -> None:
    from infra.celery_app import app as celery_app

    try:
        celery_app.send_task(DELIVER_TASK, (delivery_id,), countdown=countdown)
    except Exception:
        logger.warning("webhook delivery %s: the broker is unreachable", delivery_id)


def delivery_redeliver(delivery: WebhookDelivery) -> WebhookDelivery:
    """Send a delivery again (an admin's button): a new delivery of the same event and data,
    so the log keeps what happened to the first."""
    again = WebhookDelivery.objects.create(
        endpoint=delivery.endpoint,
        event=delivery.event,
        event_id=uuid.uuid4(),
        payload=delivery.payload,
    )
    transaction.on_commit(lambda: delivery_send(again.pk))
    return again


def endpoint_ping(endpoint: WebhookEndpoint) -> WebhookDelivery:
    """A ``ping`` delivery, to check the receiver (the admin page's Send test)."""
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint, event="ping", event_id=uuid.uuid4(), payload={"endpoint": endpoint.pk}
    )
    transaction.on_commit(lambda: delivery_send(delivery.pk))
    return delivery


# --- one attempt ------------------------------------------------------------------------------
def _body(delivery: WebhookDelivery) -> bytes:
    envelope = {
        "id": str(delivery.event_id),
        "event": delivery.event,
        "created_at": delivery.created_at.isoformat(),
        "data": delivery.payload,
    }
    return json.dumps(envelope, separators=(",", ":"), sort_keys=True).encode()


def retry_delay(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: doubling from WEBHOOK_RETRY_BASE_SECONDS."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS
    return float(min(base * 2 ** (attempt - 1), settings.WEBHOOK_RETRY_MAX_SECONDS))


def delivery_attempt(delivery_id: int) -> float | None:
    """Try a pending delivery once and log the attempt; the seconds to wait before trying
    again, or None when it is done (delivered, failed, or not pending)."""
    from tools_app.errors import PolicyDenied, ToolError
    from tools_app.executors.http.client import fetch

    delivery = WebhookDelivery.objects.select_related("endpoint").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return None
    endpoint = delivery.endpoint
    number = delivery.attempts + 1
    # An attempt claims the delivery: its number, and a lease while it runs (next_attempt_at,
    # which the attempt's end sets to when the next may start). Of two workers that hold the
    # same pending delivery (a task and its redelivery), one tries; the other finds it taken.
    now = timezone.now()
    lease = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS + 30)
    if not (
        WebhookDelivery.objects.filter(
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
            pk=delivery.pk,
            status=WebhookDelivery.Status.PENDING,
            attempts=delivery.attempts,
        ).update(attempts=number, next_attempt_at=lease)
    ):
        return None
    body = _body(delivery)
    stamp = int(time.time())
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-CC-Event": delivery.event,
        "X-CC-Delivery": str(delivery.event_id),
        "X-CC-Timestamp": str(stamp),
        "X-CC-Signature": signature(endpoint.secret, stamp, body),
    }
    host = urlsplit(endpoint.url).hostname or ""
    started, clock = timezone.now(), time.monotonic()
    code: int | None = None
    excerpt = error = ""
    retry = False
    try:
        result = fetch(
            "POST",
            endpoint.url,
            headers=headers,
            body=body.decode(),
            timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
            max_bytes=2000,
            follow_redirects=False,
            private_allowed=[host] if endpoint.allow_private else [],
        )
        code = result.status
        excerpt = (result.text or "")[:500]
        if 300 <= code < 400:
            error = f"answered HTTP {code}: a redirect, which webhooks do not follow"
        elif not 200 <= code < 300:
            error = f"answered HTTP {code}"
            retry = code >= 500 or code in RETRIED_STATUSES
    except PolicyDenied as exc:
        error = f"refused by the SSRF guard: {exc.reason}"
    except ToolError as exc:  # connection refused or reset, timeout, name not resolving
        error = f"not delivered: {exc.message}"
        retry = True
    except Exception as exc:  # a bug must not lose the delivery's record
        logger.exception("webhook delivery %s crashed", delivery_id)
        error = f"internal error: {type(exc).__name__}"
    duration = int((time.monotonic() - clock) * 1000)
    WebhookAttempt.objects.create(
        delivery=delivery,
        number=number,
        started_at=started,
        duration_ms=duration,
        status_code=code,
        error=error,
        response_excerpt=excerpt,
    )
    delivered = code is not None and 200 <= code < 300
    retry = retry and number < settings.WEBHOOK_MAX_ATTEMPTS
    wait = retry_delay(number) if retry else None
    status = WebhookDelivery.Status.DELIVERED if delivered else WebhookDelivery.Status.FAILED
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        attempts=number,
        last_status_code=code,
        last_error=error,
        status=WebhookDelivery.Status.PENDING if retry else status,
        delivered_at=started if delivered else None,
        next_attempt_at=started + timedelta(seconds=wait) if wait is not None else None,
    )
    return wait
