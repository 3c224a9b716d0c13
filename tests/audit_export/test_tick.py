"""Beat's tick: every enabled exporter that is due, and never one another process is sending
(its row is locked: skipped, not waited for, so two beats never send the same batch)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections, transaction

from platform_app.audit_export.services import exporter_step, exporters_tick
from platform_app.models import AuditExporter
from platform_app.tasks import audit_export_tick
from tests.audit_export.conftest import exporter_new, records_sealed


@pytest.fixture
def export_dir(tmp_path: Path, settings: Any) -> Path:
    settings.AUDIT_EXPORT_DIR = tmp_path
    return tmp_path


@pytest.mark.modes
@pytest.mark.django_db
def test_the_tick_sends_for_enabled_exporters_only(export_dir: Path) -> None:
    on = exporter_new(kind=AuditExporter.Kind.FILE, directory="on")
    off = exporter_new(kind=AuditExporter.Kind.FILE, directory="off", enabled=False)
    seqs = records_sealed(3)
    audit_export_tick()
    on.refresh_from_db()
    off.refresh_from_db()
    assert on.cursor == seqs[-1] and off.cursor == 0
    assert not (export_dir / "off").exists()
    assert exporters_tick() == 0  # nothing new


@pytest.mark.modes
@pytest.mark.django_db(transaction=True)
def test_an_exporter_locked_elsewhere_is_skipped(export_dir: Path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL (on SQLite, the claim of the next test)")
    exporter = exporter_new(kind=AuditExporter.Kind.FILE, directory="locked")
    records_sealed(2)
    locked, release = threading.Event(), threading.Event()

    def other_beat() -> None:
        try:
            with transaction.atomic():
                AuditExporter.objects.select_for_update().get(pk=exporter.pk)
                locked.set()
                release.wait(10)
        finally:
            connections.close_all()

    thread = threading.Thread(target=other_beat)
    thread.start()
    try:
        assert locked.wait(10)
        step = exporter_step(exporter.pk, force=True)
        assert step.sent == 0 and not step.more
    finally:
        release.set()
        thread.join()
    assert exporter_step(exporter.pk).sent == 2


@pytest.mark.django_db
def test_two_threads_of_one_process_never_send_the_same_batch(export_dir: Path) -> None:
    """Embedded mode: SQLite has no row locks, and the worker runs ticks in threads."""
    from platform_app.audit_export import services

    exporter = exporter_new(kind=AuditExporter.Kind.FILE, directory="threads")
    records_sealed(2)
    with services._claimed_here(exporter.pk) as mine:
        assert mine
        assert exporter_step(exporter.pk, force=True).sent == 0  # another thread holds it
    assert exporter_step(exporter.pk, force=True).sent == 2


@pytest.mark.django_db
def test_an_admins_save_never_moves_the_cursor_back(export_dir: Path, staff_user: Any) -> None:
    """The form was opened before a tick delivered: saving it keeps the tick's cursor."""
    from platform_app.audit_export.services import exporter_save, exporter_state

    exporter = exporter_new(kind=AuditExporter.Kind.FILE, directory="race")
    opened = AuditExporter.objects.get(pk=exporter.pk)  # the form's copy
    seqs = records_sealed(3)
    assert exporter_step(exporter.pk).sent == 3  # a tick, meanwhile
    before = exporter_state(opened)
    opened.batch_size = 7
    exporter_save(actor=staff_user, exporter=opened, before=before, secrets_changed=set())
    exporter.refresh_from_db()
    assert exporter.batch_size == 7 and exporter.cursor == seqs[-1]
