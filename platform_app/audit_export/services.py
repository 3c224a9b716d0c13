"""Delivering the sealed audit log to the exporters, in chain order, each at its own pace.

Beat sends ``platform_app.tasks.audit_export_tick`` every AUDIT_EXPORT_SECONDS. For each
enabled exporter that is due, one batch at a time: the exporter's row is locked
(``select_for_update(skip_locked=True)``: a beat on another host skips it rather than send the
same batch), the records after its cursor are read (``chain_rows``), sent, and the cursor moves
to the last of them only when the receiver took them, in the same transaction. So a record is
never skipped, and a crash between sending and committing sends that batch again (at least
once; the file exporter replaces its half-counted file, so files hold each record once).

A failure that says nothing about the records (no connection, a timeout, TLS, 401, 5xx)
keeps the cursor and waits AUDIT_EXPORT_RETRY_BASE_SECONDS, doubling up to
AUDIT_EXPORT_RETRY_MAX_SECONDS: a collector down for an hour gets everything, in order, when
it is back. A receiver that refuses a batch for its content (HTTP 400, 413, 422) gets the
batch's records one at a time; the one it refuses AUDIT_EXPORT_REJECT_TRIES times becomes a
dead letter (the admin page sends it again or discards it) and the cursor moves past it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from infra.audit_chain import GENESIS, now_stamp
from platform_app.audit_export import transports
from platform_app.models import AuditExportDeadLetter, AuditExporter
from tools_app.services.audit import audit_settings_change
from tools_app.services.audit_chain import chain_rows

logger = logging.getLogger(__name__)

AUDITED = (
    "name",
    "kind",
    "format",
    "enabled",
    "url",
    "host",
    "port",
    "transport",
    "verify_tls",
    "directory",
    "bucket",
    "region",
    "access_key_id",
    "allow_private",
    "batch_size",
    "interval_seconds",
)


# What delivery writes; an admin's save writes the settings and never these (a tick that
# moved the cursor while the form was open must not see it moved back).
STATE = (
    "cursor",
    "next_attempt_at",
    "failures",
    "isolate_until",
    "rejections",
    "last_error",
    "last_error_at",
    "last_delivered_at",
)


def retry_delay(failures: int) -> float:
    """Seconds to wait after ``failures`` failures in a row."""
    base = settings.AUDIT_EXPORT_RETRY_BASE_SECONDS
    return float(min(base * 2 ** max(failures - 1, 0), settings.AUDIT_EXPORT_RETRY_MAX_SECONDS))


# --- delivery ---------------------------------------------------------------------------------
@dataclass
class Step:
    """What one batch did: ``sent`` records delivered, ``more``: go on at once."""

    sent: int = 0
    more: bool = False


def _due(now: datetime) -> Q:
    return Q(enabled=True) & (Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))


def _failed(exporter: AuditExporter, error: str, now: datetime) -> None:
    exporter.failures += 1
    exporter.last_error, exporter.last_error_at = error[:2000], now
    exporter.next_attempt_at = now + timedelta(seconds=retry_delay(exporter.failures))


def _dead_letter(exporter: AuditExporter, seq: int, error: str, attempts: int) -> None:
    try:
        with transaction.atomic():
            AuditExportDeadLetter.objects.create(
                exporter=exporter, seq=seq, error=error[:2000], attempts=attempts
            )
    except IntegrityError:  # set aside before (an admin's retry failed again)
        AuditExportDeadLetter.objects.filter(exporter=exporter, seq=seq).update(
            error=error[:2000], attempts=attempts
        )


# Exporters a thread of this process is sending for. The row lock keeps other processes
# out; on SQLite (embedded mode: one process, a worker of several threads) there is no row
# lock, and this keeps two ticks of the same process from sending the same batch.
_sending: set[int] = set()
_sending_lock = threading.Lock()


@contextlib.contextmanager
def _claimed_here(exporter_id: int) -> Iterator[bool]:
    with _sending_lock:
        mine = exporter_id not in _sending
        _sending.add(exporter_id)
    try:
        yield mine
    finally:
        if mine:
            with _sending_lock:
                _sending.discard(exporter_id)


def exporter_step(exporter_id: int, *, force: bool = False) -> Step:
    """Send the next batch of one exporter, if it is enabled, due (or ``force``) and not
    being sent by someone else; the cursor moves only past what was taken."""
    with _claimed_here(exporter_id) as mine:
        return _step(exporter_id, force=force) if mine else Step()


def _step(exporter_id: int, *, force: bool) -> Step:
    now = timezone.now()
    with transaction.atomic():
        query = AuditExporter.objects.select_for_update(skip_locked=True).filter(pk=exporter_id)
        exporter = query.filter(Q(enabled=True) if force else _due(now)).first()
        if exporter is None:
            return Step()
        isolating = exporter.isolate_until is not None
        size = 1 if isolating else max(1, exporter.batch_size)
        rows = list(chain_rows(after=exporter.cursor, limit=size))
        if not rows:
            if exporter.interval_seconds:
                exporter.next_attempt_at = now + timedelta(seconds=exporter.interval_seconds)
                exporter.save(update_fields=["next_attempt_at", "updated_at"])
            return Step()
        first = int(rows[0]["seq"])
        if first != exporter.cursor + 1:
            exporter.last_error = (
                f"records seq {exporter.cursor + 1}–{first - 1} were deleted by the retention "
                "cut before this exporter delivered them"
            )
            exporter.last_error_at = now
        step = Step()
        try:
            note = transports.send(exporter, rows)
        except transports.Transient as exc:
            _failed(exporter, str(exc), now)
        except transports.Rejected as exc:
            if len(rows) > 1:
                # Which of them? One at a time from here to the batch's end.
                exporter.isolate_until, exporter.rejections = int(rows[-1]["seq"]), 0
                step.more = True
            else:
                exporter.rejections += 1
                error = f"seq {first}: {exc}"
                if exporter.rejections < settings.AUDIT_EXPORT_REJECT_TRIES:
                    _failed(exporter, error, now)
                else:
                    _dead_letter(exporter, first, str(exc), exporter.rejections)
                    exporter.cursor, exporter.rejections = first, 0
                    exporter.last_error, exporter.last_error_at = (
                        f"seq {first} set aside as a dead letter: {exc}"[:2000],
                        now,
                    )
                    exporter.failures, exporter.next_attempt_at = 0, None
                    step.more = True
        else:
            exporter.cursor = int(rows[-1]["seq"])
            exporter.failures = exporter.rejections = 0
            exporter.next_attempt_at = None
            exporter.last_delivered_at = now
            if note:
                exporter.last_error, exporter.last_error_at = note[:2000], now
            step.sent, step.more = len(rows), True
        if exporter.isolate_until is not None and exporter.cursor >= exporter.isolate_until:
            exporter.isolate_until = None
        exporter.save(update_fields=[*STATE, "updated_at"])
        return step


def exporter_run(exporter_id: int, *, budget: float | None = None, force: bool = False) -> int:
    """Batches of one exporter until it is caught up, fails, or ``budget`` seconds have
    passed; the number of records delivered."""
    deadline = time.monotonic() + (budget or settings.AUDIT_EXPORT_TICK_BUDGET_SECONDS)
    sent = 0
    while True:
        step = exporter_step(exporter_id, force=force)
        sent += step.sent
        if not step.more or time.monotonic() >= deadline:
            return sent


def exporters_tick() -> int:
    """Every exporter that is due (beat's task)."""
    ids = list(AuditExporter.objects.filter(_due(timezone.now())).values_list("pk", flat=True))
    total = 0
    for pk in ids:
        try:
            total += exporter_run(pk)
        except Exception:  # one broken exporter must not hold up the others
            logger.exception("audit exporter %s failed", pk)
    return total


# --- the admin's buttons ----------------------------------------------------------------------
def _test_row(actor: Any) -> dict[str, Any]:
    record = {
        "kind": "test",
        "username": getattr(actor, "username", ""),
        "status": "test",
        "tool": "",
        "group": "audit_export",
        "created_at": now_stamp(),
        "detail": {"test": True},
    }
    return {"seq": 0, "prev": GENESIS, "hash": GENESIS, "record": record}


def exporter_test(exporter: AuditExporter, *, actor: Any) -> str:
    """Send one test event (seq 0, kind ``test``) now; "" when the receiver took it, else
    why not. The file exporter only checks that it can write its directory; the S3 one
    writes the object ``audit-000000000000.jsonl`` (seq 0 is never a record's)."""
    try:
        if exporter.kind == AuditExporter.Kind.FILE:
            directory = transports.export_directory(exporter)
            directory.mkdir(parents=True, exist_ok=True)
            probe = directory / ".write-test"
            probe.write_text("ok")
            probe.unlink()
            return ""
        note = transports.send(exporter, [_test_row(actor)])
    except (transports.Transient, transports.Rejected) as exc:
        return str(exc)
    except OSError as exc:
        return str(exc.strerror or exc)
    return note


def dead_letter_retry(letter: AuditExportDeadLetter) -> str:
    """Send a set-aside record again, alone; "" when taken (the dead letter goes), else why
    not (kept, with the new error)."""
    rows = list(chain_rows(after=letter.seq - 1, limit=1))
    now = timezone.now()
    if not rows or int(rows[0]["seq"]) != letter.seq:
        error = "the record is no longer in the audit log (deleted by the retention cut)"
    else:
        try:
            transports.send(letter.exporter, rows)
        except (transports.Transient, transports.Rejected) as exc:
            error = str(exc)
        else:
            letter.delete()
            return ""
    AuditExportDeadLetter.objects.filter(pk=letter.pk).update(
        error=error[:2000], attempts=letter.attempts + 1, retried_at=now
    )
    return error


def dead_letter_discard(letter: AuditExportDeadLetter, *, actor: Any) -> None:
    """An admin gives up on a record: it never reaches that receiver, and that is audited."""
    with transaction.atomic():
        audit_settings_change(
            user=actor,
            group="audit_export",
            tool=letter.exporter.name[:64],
            before={"dead_letter": letter.seq, "error": letter.error[:200]},
            after={},
        )
        letter.delete()


# --- settings ---------------------------------------------------------------------------------
def exporter_state(exporter: AuditExporter) -> dict[str, Any]:
    return {name: getattr(exporter, name) for name in AUDITED} | {
        "token": "set" if exporter.token else "none",
        "headers": "set" if exporter.headers else "none",
        "secret_access_key": "set" if exporter.secret_access_key else "none",
        "ca_pem": "set" if exporter.ca_pem else "none",
    }


SECRETS = ("token", "headers", "secret_access_key")


def _secret_states(
    before: dict[str, Any], after: dict[str, Any], changed: set[str]
) -> dict[str, tuple[str | None, str | None]]:
    """token/headers as the audit log shows secrets: set, changed, removed (never a value)."""
    states: dict[str, tuple[str | None, str | None]] = {}
    for name in SECRETS:
        was, now = before.pop(name, "none"), after.pop(name, "none")
        if now == "set" and was == "set" and name in changed:
            now = "changed"
        elif now == "none" and was == "set":
            now = "removed"
        states[name] = (None if was == "none" else was, None if now == "none" else now)
    return states


@transaction.atomic
def exporter_save(
    *, actor: Any, exporter: AuditExporter, before: dict[str, Any] | None, secrets_changed: set[str]
) -> AuditExporter:
    """Save what the form validated and audit it (secrets as set/changed/removed).
    ``before``: ``exporter_state`` read before the form changed it (None: a new exporter)."""
    if exporter.pk is None:
        exporter.created_by = actor if getattr(actor, "pk", None) else None
        # A new exporter starts at the chain's beginning: the whole log is delivered.
        exporter.cursor = 0
        exporter.save()
    else:
        # Try at once with the new settings: a fixed address should not wait out the
        # back-off of the broken one.
        exporter.next_attempt_at, exporter.failures = None, 0
        settings_fields = [
            f.name
            for f in AuditExporter._meta.concrete_fields
            if f.name not in (*STATE, "id", "created_by", "created_at")
        ]
        exporter.save(update_fields=[*settings_fields, "next_attempt_at", "failures"])
    shown_before, after = dict(before or {}), exporter_state(exporter)
    states = _secret_states(shown_before, after, secrets_changed)
    audit_settings_change(
        user=actor,
        group="audit_export",
        tool=exporter.name[:64],
        before=shown_before,
        after=after,
        states=states,
    )
    return exporter


@transaction.atomic
def exporter_delete(*, actor: Any, exporter: AuditExporter) -> None:
    before = exporter_state(exporter)
    states = _secret_states(before, {}, set())
    exporter.delete()
    audit_settings_change(
        user=actor,
        group="audit_export",
        tool=before["name"][:64],
        before=before,
        after={},
        states=states,
    )
