"""Retries of ``/v1`` chat requests join the turn the first attempt started (issue 39).

A client that times out waiting (an approver who has not decided yet) and sends the request
again must not start a second turn: two conversations, two shell calls. A request is matched
to an earlier one of the same token by

- its ``Idempotency-Key`` header (any client; the key is the client's, kept
  ``V1_IDEMPOTENCY_SECONDS``; the same key with another body is refused, 422), or
- for a request without one, the openai SDK's own retry: the SDK re-sends the same body with
  ``X-Stainless-Retry-Count`` ≥ 1 (it makes an idempotency key for every POST but sends no
  header for it to this API), so a retry joins the newest started request of the token with
  the same body from the last ``SDK_RETRY_WINDOW`` seconds.

The rows live in the database (``ApiRequestKey``), so a retry that reaches another host of a
fleet finds the turn too. A non-streaming client that leaves while its turn runs gives it
``V1_DISCONNECT_GRACE_SECONDS`` before the turn is stopped (``request_left`` then
``request_stop_if_due``); a retry that joins in the meantime keeps it running.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from platform_app.api.errors import ApiError
from platform_app.models import ApiRequestKey

# The SDK retries within seconds of a failed attempt (its back-off is at most 8 s between
# tries, a few tries): a request with the same body older than this is another request.
SDK_RETRY_WINDOW = 900
KEY_MAX_LENGTH = 255


def body_hash(data: Any) -> str:
    """The same JSON body, whatever the order of its keys or its spacing, hashes the same."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def idempotency_key(header: str) -> str:
    """The ``Idempotency-Key`` header checked: printable ASCII, at most 255 characters."""
    key = header.strip()
    if len(key) > KEY_MAX_LENGTH or not all(" " <= c <= "~" for c in key):
        raise ApiError(
            400,
            f"Idempotency-Key must be at most {KEY_MAX_LENGTH} printable ASCII characters",
            code="invalid_idempotency_key",
        )
    return key


def sdk_retry(header: str) -> bool:
    """``X-Stainless-Retry-Count`` says this is the openai SDK's second or later attempt."""
    value = header.strip()
    return value.isascii() and value.isdigit() and int(value) > 0


@dataclass(frozen=True)
class Claim:
    """The request's row; ``joined`` when an earlier attempt started its turn already."""

    id: int
    joined: bool
    conversation_id: int | None = None
    turn_id: int | None = None
    model: str = ""
    trace: bool = True
    created: int = 0
    attempts: int = 1


def _new(row: ApiRequestKey) -> Claim:
    return Claim(id=row.pk, joined=False, created=int(row.created_at.timestamp()))


def _joined(row: ApiRequestKey) -> Claim:
    return Claim(
        id=row.pk,
        joined=True,
        conversation_id=row.conversation_id,
        turn_id=row.turn_id,
        model=row.model,
        trace=row.trace,
        created=int(row.created_at.timestamp()),
        attempts=row.attempts,
    )


def request_keys_sweep() -> int:
    """Delete every token's keys older than ``V1_IDEMPOTENCY_SECONDS``; how many."""
    expired = timezone.now() - timedelta(seconds=settings.V1_IDEMPOTENCY_SECONDS)
    return ApiRequestKey.objects.filter(created_at__lt=expired).delete()[0]


def request_claim(*, token_id: int, key: str, body: str, sdk_retry: bool) -> Claim:
    """Find the earlier attempt this request repeats (and keep its turn running), or note
    this one as the first."""
    now = timezone.now()
    expired = now - timedelta(seconds=settings.V1_IDEMPOTENCY_SECONDS)
    ApiRequestKey.objects.filter(token_id=token_id, created_at__lt=expired).delete()
    if not key:
        if sdk_retry:
            with transaction.atomic():
                row = (
                    ApiRequestKey.objects.select_for_update()
                    .filter(
                        token_id=token_id,
                        key="",
                        body_hash=body,
                        started=True,
                        created_at__gte=now - timedelta(seconds=SDK_RETRY_WINDOW),
                    )
                    .order_by("-created_at", "-id")
                    .first()
                )
                if row is not None:
                    return _join(row)
        return _new(ApiRequestKey.objects.create(token_id=token_id, body_hash=body))
    try:
        with transaction.atomic():
            row = ApiRequestKey.objects.create(token_id=token_id, key=key, body_hash=body)
        return _new(row)
    except IntegrityError:
        pass
    with transaction.atomic():
        row = ApiRequestKey.objects.select_for_update().get(token_id=token_id, key=key)
        if row.body_hash != body:
            raise ApiError(
                422,
                "this Idempotency-Key was used with another request body; a retry must send "
                "the same body, a new request a new key",
                code="idempotency_key_reused",
            )
        if not row.started:
            raise ApiError(
                409,
                "a request with this Idempotency-Key is still starting; retry in a moment",
                code="idempotency_key_in_use",
            )
        return _join(row)


def _join(row: ApiRequestKey) -> Claim:
    row.attempts += 1
    row.stop_after = None  # its client is back
    row.save(update_fields=["attempts", "stop_after"])
    return _joined(row)


def request_started(
    *, claim_id: int, conversation_id: int, turn_id: int | None, model: str, trace: bool
) -> None:
    ApiRequestKey.objects.filter(pk=claim_id).update(
        started=True, conversation_id=conversation_id, turn_id=turn_id, model=model, trace=trace
    )


def request_forget(claim_id: int) -> None:
    """The request was refused before its turn started: a retry may try afresh."""
    ApiRequestKey.objects.filter(pk=claim_id, started=False).delete()


def request_left(claim_id: int, attempts: int, grace: float) -> None:
    """The client of a non-streaming request left: stop its turn after ``grace`` seconds
    unless a retry joins it first. ``attempts`` is the count this client saw: when another
    attempt joined since, that one's client holds the turn now."""
    until = timezone.now() + timedelta(seconds=grace)
    ApiRequestKey.objects.filter(pk=claim_id, attempts=attempts).update(stop_after=until)


def request_stop_if_due(claim_id: int) -> bool:
    """Stop the turn of a request whose client left and did not come back in time."""
    from platform_app.api.v1.services import turn_stop_for_client

    row = ApiRequestKey.objects.filter(pk=claim_id).values_list("turn_id", flat=True).first()
    due = ApiRequestKey.objects.filter(pk=claim_id, stop_after__lte=timezone.now())
    if row is None or not due.update(stop_after=None):
        return False  # a retry joined it (or another host stopped it)
    turn_stop_for_client(row)
    return True
