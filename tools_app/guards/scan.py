"""Walking a call's arguments or result (JSON) and running the detectors on its strings.

Only strings of ``SCAN_MIN_LENGTH`` characters or more are scanned (no secret or card number is
shorter), and at most ``SCAN_MAX_CHARS`` characters per call: beyond that a large result is let
through unscanned after the cap (logged), rather than a worker spending seconds on one file.
Keys are not scanned, only values.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools_app.guards.secrets import Match

logger = logging.getLogger(__name__)

SCAN_MIN_LENGTH = 8
SCAN_MAX_CHARS = 200_000

Detector = Callable[[str], list[Match]]


@dataclass(frozen=True)
class Found:
    guard: str  # "secrets" | "pii"
    kind: str  # "AWS Access Key"
    where: str  # "arguments.headers.X-Token", "result.items[2].text"


@dataclass
class _Budget:
    left: int = SCAN_MAX_CHARS
    capped: bool = False


@dataclass
class Scan:
    value: Any  # with the findings of the ``redact`` guards replaced
    found: list[Found] = field(default_factory=list)
    capped: bool = False


def scan(value: Any, *, root: str, detectors: dict[str, Detector], redact: set[str]) -> Scan:
    """``detectors``: guard name → detector; ``redact``: the guards whose findings are
    replaced by ``[REDACTED:<kind>]`` in the returned value."""
    found: list[Found] = []
    budget = _Budget()

    def walk(item: Any, where: str) -> Any:
        if isinstance(item, str):
            return _scan_text(item, where, detectors, redact, found, budget)
        if isinstance(item, dict):
            return {k: walk(v, f"{where}.{k}") for k, v in item.items()}
        if isinstance(item, list):
            return [walk(v, f"{where}[{i}]") for i, v in enumerate(item)]
        return item

    out = walk(value, root)
    if budget.capped:
        logger.info("guard scan of %s stopped at %d characters", root, SCAN_MAX_CHARS)
    return Scan(out, found, budget.capped)


def _scan_text(
    text: str,
    where: str,
    detectors: dict[str, Detector],
    redact: set[str],
    found: list[Found],
    budget: _Budget,
) -> str:
    if len(text) < SCAN_MIN_LENGTH or budget.left <= 0:
        budget.capped = budget.capped or len(text) >= SCAN_MIN_LENGTH
        return text
    head = text[: budget.left]
    budget.left -= len(head)
    if len(head) < len(text):
        budget.capped = True
    spans: list[Match] = []
    for guard, detector in detectors.items():
        for m in detector(head):
            found.append(Found(guard, m.kind, where))
            if guard in redact:
                spans.append(m)
    if not spans:
        return text
    out, last = [], 0
    for m in sorted(spans, key=lambda m: m.start):
        if m.start < last:  # overlapping finds of two guards: the first names it
            continue
        out.append(text[last : m.start])
        out.append(f"[REDACTED:{m.kind}]")
        last = m.end
    out.append(text[last:])
    return "".join(out)
