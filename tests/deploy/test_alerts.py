"""deploy/prometheus/alerts.yml: each rule is well formed, its PromQL parses, and every metric
it names is one the app exports (and docs/OBSERVABILITY.md lists)."""

from __future__ import annotations

import re
from typing import Any

import promql_parser
import pytest
import yaml

from tests.deploy.support import ROOT

RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
SOURCES = [
    ROOT / "infra" / "metrics.py",
    ROOT / "infra" / "observability.py",
    ROOT / "tools_app" / "apps.py",
    ROOT / "platform_app" / "audit_export" / "metrics.py",
]


def rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r["alert"])
def test_each_rule_parses_and_says_what_to_do(rule: dict[str, Any]) -> None:
    assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, rule
    promql_parser.parse(rule["expr"])  # raises on a syntax error
    assert rule["labels"]["severity"] in {"critical", "warning", "info"}
    assert rule["annotations"]["summary"]


def test_a_broken_expression_would_be_caught() -> None:
    with pytest.raises(ValueError):
        promql_parser.parse("sum(rate(cc_turns_total[10m])")


def test_every_metric_named_is_exported_and_documented() -> None:
    source = "\n".join(p.read_text() for p in SOURCES)
    documented = (ROOT / "docs" / "OBSERVABILITY.md").read_text()
    named = {m for rule in rules() for m in re.findall(r"\bcc_[a-z_]+", rule["expr"])}
    assert named
    for metric in named:
        base = re.sub(r"_(bucket|sum|count)$", "", metric)
        assert f"`{base}`" in documented, metric
        assert f'"{base.removesuffix("_total")}"' in source, metric
