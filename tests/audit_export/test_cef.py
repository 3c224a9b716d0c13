"""CEF: header fields escape the pipe and the backslash (a line break becomes a space),
extension values escape the backslash and the equals sign and write line breaks as \\n and
\\r; kind, tool, status, person and severity land in the fields a SIEM maps."""

from __future__ import annotations

import re

from platform_app.audit_export.formats import (
    cef_header_escape,
    cef_line,
    cef_value_escape,
    json_line,
    severity,
)

ROW = {
    "seq": 42,
    "prev": "a" * 64,
    "hash": "b" * 64,
    "record": {
        "kind": "call",
        "username": "eve|x=1",
        "tool": "shell|exec\\",
        "group": "shell",
        "status": "denied",
        "source": "chat",
        "policy_verdict": "denied",
        "policy_reason": "path a=b\\c\nsecond line\r\nthird",
        "error": "",
        "conversation_title": "plan | q3",
        "conversation_id": 7,
        "duration_ms": 12,
        "created_at": "2026-11-29T08:00:00.250000+00:00",
    },
}


def test_it_escapes_header_fields() -> None:
    assert cef_header_escape("a|b\\c") == "a\\|b\\\\c"
    assert cef_header_escape("one\ntwo\r\nthree") == "one two three"
    assert cef_header_escape("x=y") == "x=y"  # equals needs no escape in the header


def test_it_escapes_extension_values() -> None:
    assert cef_value_escape("a=b\\c") == "a\\=b\\\\c"
    assert cef_value_escape("one\ntwo\r\nthree\rfour") == "one\\ntwo\\nthree\\rfour"
    assert cef_value_escape("pipe|stays") == "pipe|stays"


def test_it_maps_a_record_to_one_cef_line() -> None:
    line = cef_line(ROW)
    assert "\n" not in line and "\r" not in line
    header = re.findall(r"((?:[^|\\]|\\.)*)\|", line)[:7]
    assert header == [
        "CEF:0",
        "Control Center",
        "controlcenter",
        "1",
        "call",
        "tool call shell\\|exec\\\\ denied",
        "6",
    ]
    extension = line.split("|6|", 1)[1]
    fields = dict(re.findall(r"(\w+)=((?:[^\\=]|\\.)*?)(?= \w+=|$)", extension))
    assert fields["suser"] == "eve|x\\=1"
    assert fields["act"] == "denied" and fields["cat"] == "call"
    assert fields["cs1Label"] == "tool" and fields["cs1"] == "shell|exec\\\\"
    assert fields["msg"] == "path a\\=b\\\\c\\nsecond line\\nthird"
    assert fields["externalId"] == "42" and fields["cs3"] == "b" * 64
    assert fields["rt"] == "1795939200250"
    assert fields["cs5"] == "plan | q3" and fields["cn2"] == "12"


def test_severity_ranks_refusals_and_changes_above_ordinary_calls() -> None:
    assert severity({"kind": "call", "status": "succeeded"}) == 3
    assert severity({"kind": "call", "status": "denied"}) == 6
    assert severity({"kind": "settings", "status": "changed"}) == 6
    assert severity({"kind": "definition", "status": "changed"}) == 7


def test_json_keeps_the_chain_fields_beside_the_record() -> None:
    import json

    event = json.loads(json_line(ROW))
    assert set(event) == {"seq", "hash", "prev", "record"}
    assert event["record"]["policy_reason"].endswith("third")
