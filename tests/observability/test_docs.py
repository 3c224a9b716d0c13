"""The Grafana dashboard and docs/OBSERVABILITY.md name the metrics the code exports, and
nothing else."""

from __future__ import annotations

import json
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
SUFFIXES = ("_total", "_bucket", "_count", "_sum", "_created")


def base(name: str) -> str:
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def exported() -> set[str]:
    from prometheus_client.metrics import MetricWrapperBase

    from infra import metrics

    names = {m._name for m in vars(metrics).values() if isinstance(m, MetricWrapperBase)}
    # Read when scraped (infra/observability.py, tools_app/apps.py,
    # platform_app/audit_export/metrics.py) or always present.
    return names | {
        "cc_process",
        "cc_queue_depth",
        "cc_approvals_pending",
        "cc_audit_chain_head",
        "cc_audit_unsealed_age_seconds",
        "cc_audit_checkpoint_age_seconds",
        "cc_audit_export_lag_records",
        "cc_audit_export_lag_seconds",
        "cc_audit_export_dead_letters",
        "cc_audit_export_enabled",
    }


def test_the_dashboard_uses_only_exported_metrics_and_shows_each():
    dashboard = json.loads((DOCS / "grafana-dashboard.json").read_text())
    used = {
        base(name)
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"\bcc_[a-z_]+", target["expr"])
    }
    assert used <= exported(), used - exported()
    assert exported() - used <= {"cc_process", "cc_beat_ticks"}


def test_the_docs_list_every_metric():
    text = (DOCS / "OBSERVABILITY.md").read_text()
    listed = {base(n) for n in re.findall(r"^\| `(cc_[a-z_]+)`", text, re.MULTILINE)}
    assert listed == exported()
