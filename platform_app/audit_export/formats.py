"""What one sealed audit record looks like to a security log system.

The input is a chain row (``tools_app.services.audit_chain.chain_rows``): ``{"seq", "prev",
"hash", "record"}``. **JSON** keeps that shape (the record document under ``record``), so a
receiver can recompute the hash: SHA-256 over the canonical JSON of ``{"seq", "prev",
"record"}`` (``infra.audit_chain.record_hash``). **CEF** is ArcSight's Common Event Format,
one line, with the header and extension escaping of the CEF specification (rev. 25).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

VENDOR = "Control Center"
PRODUCT = "controlcenter"
VERSION = "1"

# CEF severity (0-10) of a record: what a SOC triages first. Refusals, people and settings
# changes, an auditor reading someone's conversation and imported-definition changes rank above
# an ordinary call.
_SEVERITY = {
    ("call", "succeeded"): 3,
    ("call", "failed"): 5,
    ("call", "denied"): 6,
    ("call", "cancelled"): 3,
    ("approval", "approved"): 4,
    ("approval", "denied"): 5,
    ("approval", "expired"): 4,
}
_KIND_SEVERITY = {
    "call": 3,
    "approval": 4,
    "settings": 6,
    "people": 6,
    "read": 6,
    "quota": 4,
    "definition": 7,
    "import": 4,
}


def severity(record: dict[str, Any]) -> int:
    kind, status = record.get("kind") or "", record.get("status") or ""
    return _SEVERITY.get((kind, status), _KIND_SEVERITY.get(kind, 3))


def syslog_severity(record: dict[str, Any]) -> int:
    """RFC 5424 severity from the CEF one: informational, notice, warning, critical."""
    value = severity(record)
    if value >= 9:
        return 2
    if value >= 7:
        return 4
    if value >= 4:
        return 5
    return 6


def title(record: dict[str, Any]) -> str:
    """A short human name of the event ("tool call shell_exec failed")."""
    kind = record.get("kind") or "record"
    words = {
        "call": "tool call",
        "approval": "approval",
        "settings": "settings change",
        "people": "people change",
        "read": "conversation read",
        "quota": "quota refusal",
        "definition": "tool definition",
        "import": "history import",
    }.get(kind, kind)
    parts = [words, record.get("tool") or record.get("group") or "", record.get("status") or ""]
    return " ".join(p for p in parts if p)


def json_event(row: dict[str, Any]) -> dict[str, Any]:
    return {"seq": row["seq"], "hash": row["hash"], "prev": row["prev"], "record": row["record"]}


def json_line(row: dict[str, Any]) -> str:
    return json.dumps(json_event(row), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


# --- CEF --------------------------------------------------------------------------------------
def cef_header_escape(value: Any) -> str:
    """Header fields: backslash and pipe escaped; a line break is not allowed there and
    becomes a space."""
    text = str(value)
    text = text.replace("\\", "\\\\").replace("|", "\\|")
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def cef_value_escape(value: Any) -> str:
    """Extension values: backslash and equals escaped, line breaks written as ``\\n`` and
    ``\\r`` (the pipe needs no escape here)."""
    text = str(value)
    text = text.replace("\\", "\\\\").replace("=", "\\=")
    return text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r")


def _millis(stamp: str | None) -> int | None:
    if not stamp:
        return None
    return int(datetime.fromisoformat(stamp).timestamp() * 1000)


def cef_line(row: dict[str, Any]) -> str:
    record = row["record"]
    kind = record.get("kind") or "record"
    outcome = record.get("status") or ""
    message = record.get("error") or record.get("policy_reason") or ""
    pairs: list[tuple[str, Any]] = [
        ("rt", _millis(record.get("created_at"))),
        ("externalId", row["seq"]),
        ("cat", kind),
        ("suser", record.get("username") or ""),
        ("act", outcome),
        ("outcome", outcome),
        ("app", record.get("source") or ""),
        ("msg", message[:1000]),
    ]
    # CEF's custom fields, each with its label (only those that carry a value).
    custom = [
        ("cs1", "tool", record.get("tool")),
        ("cs2", "group", record.get("group")),
        ("cs3", "hash", row["hash"]),
        ("cs4", "prev", row["prev"]),
        ("cs5", "conversation", record.get("conversation_title")),
        ("cs6", "policyVerdict", record.get("policy_verdict")),
        ("cn1", "conversationId", record.get("conversation_id")),
        ("cn2", "durationMs", record.get("duration_ms")),
    ]
    for key, label, value in custom:
        if value not in (None, ""):
            pairs += [(f"{key}Label", label), (key, value)]
    extension = " ".join(
        f"{key}={cef_value_escape(value)}" for key, value in pairs if value not in (None, "")
    )
    header = [
        "CEF:0",
        VENDOR,
        PRODUCT,
        VERSION,
        kind,
        title(record),
        str(severity(record)),
    ]
    return "|".join([header[0], *(cef_header_escape(h) for h in header[1:])]) + "|" + extension


def render(row: dict[str, Any], fmt: str) -> str:
    """One record as one line of ``fmt`` (``json`` or ``cef``)."""
    return cef_line(row) if fmt == "cef" else json_line(row)
