"""The exporters' gauges on the web process's /metrics (read when scraped)."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric


def read() -> Iterable[Metric]:
    from platform_app.audit_export.selectors import exporters_lag

    labels = ["exporter", "kind"]
    records = GaugeMetricFamily(
        "cc_audit_export_lag_records",
        "Sealed audit records not yet delivered to this exporter (chain head seq - cursor)",
        labels=labels,
    )
    seconds = GaugeMetricFamily(
        "cc_audit_export_lag_seconds",
        "Age of the oldest sealed audit record not yet delivered to this exporter",
        labels=labels,
    )
    letters = GaugeMetricFamily(
        "cc_audit_export_dead_letters",
        "Audit records this exporter's receiver refused, set aside for an admin",
        labels=labels,
    )
    enabled = GaugeMetricFamily(
        "cc_audit_export_enabled", "1 when the exporter is enabled", labels=labels
    )
    for lag in exporters_lag():
        values = [lag.exporter.name, lag.exporter.kind]
        records.add_metric(values, lag.records)
        seconds.add_metric(values, lag.seconds)
        letters.add_metric(values, lag.dead_letters)
        enabled.add_metric(values, 1 if lag.exporter.enabled else 0)
    return [records, seconds, letters, enabled]
