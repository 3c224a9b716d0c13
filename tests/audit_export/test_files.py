"""The scheduled file export: one JSONL file per batch under AUDIT_EXPORT_DIR, grouped by
day, lines in chain order that verify against their hashes; a file left by a run whose cursor
was not saved is replaced, not duplicated; the next run waits for the interval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.audit_chain import record_hash
from platform_app.audit_export.services import exporter_run
from platform_app.models import AuditExporter
from tests.audit_export.conftest import exporter_new, records_sealed


@pytest.fixture
def export_dir(tmp_path: Path, settings: Any) -> Path:
    settings.AUDIT_EXPORT_DIR = tmp_path
    return tmp_path


def _lines(directory: Path) -> list[dict[str, Any]]:
    lines = []
    for path in sorted(directory.glob("*/audit-*.jsonl")):
        lines += [json.loads(line) for line in path.read_text().splitlines()]
    return lines


@pytest.mark.modes
@pytest.mark.django_db
def test_it_writes_jsonl_files_in_order(export_dir: Path) -> None:
    exporter = exporter_new(
        kind=AuditExporter.Kind.FILE, directory="siem/daily", batch_size=3, interval_seconds=3600
    )
    seqs = records_sealed(7)
    assert exporter_run(exporter.pk) == 7
    target = export_dir / "siem" / "daily"
    files = sorted(p.name for p in target.glob("*/audit-*.jsonl"))
    assert len(files) == 3 and files[0] == f"audit-{seqs[0]:012d}-{seqs[2]:012d}.jsonl"
    lines = _lines(target)
    assert [line["seq"] for line in lines] == seqs
    for line in lines:
        assert record_hash(line["seq"], line["prev"], line["record"]) == line["hash"]
    for before, after in zip(lines, lines[1:], strict=False):
        assert after["prev"] == before["hash"]

    # Scheduled: caught up, it waits for its interval.
    exporter.refresh_from_db()
    assert exporter.next_attempt_at is not None
    records_sealed(2, start=10)
    assert exporter_run(exporter.pk) == 0

    # A run whose cursor was lost (written, not committed) is written again, not twice.
    exporter.cursor = seqs[2]  # the end of the first file: the later ones were not saved
    exporter.save()
    assert exporter_run(exporter.pk, force=True) == 6
    assert [line["seq"] for line in _lines(target)] == seqs + [seqs[-1] + 1, seqs[-1] + 2]
