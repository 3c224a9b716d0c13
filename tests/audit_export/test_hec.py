"""HTTP event collector (Splunk HEC) against a real HTTP server on loopback: the token in
``Authorization: Splunk``, events batched in one body, in order; a 503 backs off and
delivers later; a record answered 400 is tried a few times, set aside as a dead letter, and
the records after it still go out."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from platform_app.audit_export.services import dead_letter_retry, exporter_run
from platform_app.models import AuditExportDeadLetter, AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed
from tests.httpserver import Hit, Response, serving

COLLECTOR = "127.0.0.91"
TOKEN = "hec-token-1234"  # noqa: S105


@pytest.fixture
def collector() -> Iterator[Any]:
    lock = threading.Lock()
    state: dict[str, Any] = {"answers": [], "refuse_tool": None, "events": []}

    def event(hit: Hit) -> Response:
        if hit.headers.get("authorization") != f"Splunk {TOKEN}":
            return 401, [("Content-Type", "application/json")], b'{"text":"Invalid token"}'
        with lock:
            if state["answers"]:
                status = state["answers"].pop(0)
                body = state.get("busy_body") or b'{"text":"Server is busy","code":9}'
                return status, [("Content-Type", "application/json")], body
        events = [json.loads(line) for line in hit.body.decode().splitlines() if line]
        refused = state["refuse_tool"]
        if refused and any(e["event"]["record"]["tool"] == refused for e in events):
            body = b'{"text":"Invalid data format","code":6,"invalid-event-number":0}'
            return 400, [("Content-Type", "application/json")], body
        with lock:
            state["events"].extend(events)
        return 200, [("Content-Type", "application/json")], b'{"text":"Success","code":0}'

    with serving(COLLECTOR, {("POST", "/services/collector/event"): event}) as server:
        server.state = state
        yield server


def _hec(server: Any, **fields: Any) -> AuditExporter:
    return exporter_new(
        kind=AuditExporter.Kind.HEC,
        url=server.url("/"),
        token=TOKEN,
        allow_private=True,
        **fields,
    )


def _seqs(server: Any) -> list[int]:
    return [e["event"]["seq"] for e in server.state["events"]]


@pytest.mark.modes
@pytest.mark.django_db
def test_it_posts_batches_with_the_token_and_backs_off_on_503(
    collector: Any, fast_retries: Any
) -> None:
    exporter = _hec(collector, batch_size=4)
    seqs = records_sealed(6)
    collector.state["answers"] = [503]

    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == 0 and exporter.failures == 1
    assert "HTTP 503" in exporter.last_error
    assert 0.5 < (exporter.next_attempt_at - timezone.now()).total_seconds() <= 1.0

    # Still down: the wait doubles.
    collector.state["answers"] = [503]
    assert exporter_run(exporter.pk, force=True) == 0
    exporter.refresh_from_db()
    assert exporter.failures == 2
    assert 1.5 < (exporter.next_attempt_at - timezone.now()).total_seconds() <= 2.0

    exporter.next_attempt_at = timezone.now() - timedelta(seconds=1)  # the wait is over
    exporter.save()
    assert exporter_run(exporter.pk) == 6
    assert _seqs(collector) == seqs
    posts = [h for h in collector.hits if h.path == "/services/collector/event"]
    assert [len(h.body.decode().splitlines()) for h in posts[-2:]] == [4, 2]
    first = collector.state["events"][0]
    assert first["sourcetype"] == "controlcenter:audit:json" and first["source"] == "controlcenter"
    assert first["event"]["record"]["kind"] == "settings"
    exporter.refresh_from_db()
    assert exporter.cursor == seqs[-1] and exporter.failures == 0


@pytest.mark.django_db
def test_a_wrong_token_keeps_every_record(collector: Any, fast_retries: Any) -> None:
    exporter = _hec(collector)
    exporter.token = "wrong"  # noqa: S105
    exporter.save()
    records_sealed(3)
    assert exporter_run(exporter.pk) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == 0 and "HTTP 401" in exporter.last_error
    assert not AuditExportDeadLetter.objects.exists()


@pytest.mark.django_db
def test_a_400_about_the_tokens_configuration_keeps_every_record(
    collector: Any, fast_retries: Any
) -> None:
    """Splunk's code 10, "Data channel is missing" (a token with indexer acknowledgement):
    every record would be refused alike, so none is set aside."""
    exporter = _hec(collector, batch_size=1)
    records_sealed(2)
    collector.state["answers"] = [400, 400, 400, 400]
    collector.state["busy_body"] = b'{"text":"Data channel is missing","code":10}'
    for _ in range(4):
        assert exporter_run(exporter.pk, force=True) == 0
    exporter.refresh_from_db()
    assert exporter.cursor == 0 and exporter.failures == 4 and exporter.rejections == 0
    assert "Data channel is missing" in exporter.last_error
    assert not AuditExportDeadLetter.objects.exists()


@pytest.mark.modes
@pytest.mark.django_db
def test_a_record_refused_with_400_becomes_a_dead_letter(collector: Any, fast_retries: Any) -> None:
    exporter = _hec(collector, batch_size=10)
    seqs = records_sealed(5)
    collector.state["refuse_tool"] = "setting-2"  # the third record

    # The batch is refused; its records go one at a time: two delivered, the third refused.
    assert exporter_run(exporter.pk) == 2
    exporter.refresh_from_db()
    assert exporter.cursor == seqs[1] and exporter.rejections == 1
    assert exporter.isolate_until == seqs[-1] and "HTTP 400" in exporter.last_error
    assert exporter_run(exporter.pk, force=True) == 0  # refused a second time
    assert exporter_run(exporter.pk, force=True) == 2  # a third: set aside, the rest go
    exporter.refresh_from_db()
    letter = AuditExportDeadLetter.objects.get(exporter=exporter)
    assert letter.seq == seqs[2] and letter.attempts == 3 and "Invalid data format" in letter.error
    assert _seqs(collector) == [seqs[0], seqs[1], seqs[3], seqs[4]]
    assert exporter.cursor == seqs[-1] and exporter.isolate_until is None

    # Its batch behind it, the exporter sends in batches again.
    more = records_sealed(3, start=10)
    posts_before = len(collector.hits)
    assert exporter_run(exporter.pk, force=True) == 3
    assert len(collector.hits) == posts_before + 1

    # The collector takes it now: Retry delivers it and the dead letter goes.
    assert "HTTP 400" in dead_letter_retry(letter)  # still refused: kept
    assert AuditExportDeadLetter.objects.filter(pk=letter.pk).exists()
    collector.state["refuse_tool"] = None
    assert dead_letter_retry(AuditExportDeadLetter.objects.get(pk=letter.pk)) == ""
    assert not AuditExportDeadLetter.objects.exists()
    assert _seqs(collector)[-1] == seqs[2]
    assert _seqs(collector)[-4:-1] == more


@pytest.mark.modes
def test_beats_tick_delivers_through_a_tools_worker(collector: Any, worker: str) -> None:
    """The task as beat sends it: queue ``tools``, taken by the mode's worker (a separate
    ``celery worker`` process in distributed mode)."""
    from infra.celery_app import app
    from tests.helpers import wait_for

    exporter = _hec(collector)
    seqs = records_sealed(3)
    app.send_task("platform_app.tasks.audit_export_tick", queue="tools")
    wait_for(lambda: len(collector.state["events"]) >= 3, timeout=30, message="3 events")
    assert _seqs(collector) == seqs
    wait_for(
        lambda: AuditExporter.objects.get(pk=exporter.pk).cursor == seqs[-1],
        timeout=10,
        message="the cursor saved",
    )
