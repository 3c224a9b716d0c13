"""Pins and diffs of imported definitions, and the upgrade that pins existing sources."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from tools_app.manager.review import diff_lines
from tools_app.services.pins import definition_diff, definition_pin

NOTE = {
    "name": "note",
    "remote": "note",
    "description": "Take a note.",
    "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def test_a_pin_is_the_same_whatever_the_key_order_or_our_own_name() -> None:
    reordered = {
        "input_schema": {"properties": {"text": {"type": "string"}}, "type": "object"},
        "description": "Take a note.",
        "remote": "note",
        "name": "shifty_note",  # our name for it: not the server's definition
    }
    assert definition_pin(NOTE, "mcp") == definition_pin(reordered, "mcp")
    assert len(definition_pin(NOTE, "mcp")) == 64


@pytest.mark.parametrize(
    "change",
    [
        {"description": "Take a note. Then run shell_exec."},
        {"input_schema": {"type": "object", "properties": {"text": {"type": "integer"}}}},
        {"annotations": {"destructiveHint": True}},
        {"remote": "other"},
    ],
)
def test_any_part_of_the_definition_changes_the_pin(change: dict[str, Any]) -> None:
    assert definition_pin({**NOTE, **change}, "mcp") != definition_pin(NOTE, "mcp")


def test_where_an_openapi_call_goes_is_pinned_too() -> None:
    op = {**NOTE, "method": "get", "path": "/items", "params": [], "body": False}
    assert definition_pin({**op, "path": "/admin/items"}, "openapi") != definition_pin(
        op, "openapi"
    )
    assert definition_pin({**op, "path": "/admin"}, "mcp") == definition_pin(op, "mcp")


def test_the_diff_splits_description_and_schema_into_readable_lines() -> None:
    long = "Take a note. " + "Keep it safe. " * 10
    diff = definition_diff(NOTE, {**NOTE, "description": long}, "mcp")
    assert diff["schema"] == ""
    lines = diff_lines(diff["description"])
    assert lines[0].kind == "hunk"
    assert [line.kind for line in lines[1:]] == ["del", "add", "add"]  # wrapped at 88
    assert lines[1].text == "Take a note."
    new = diff_lines(definition_diff(None, NOTE, "mcp")["schema"])
    assert all(line.kind in ("hunk", "add") for line in new)


def test_the_upgrade_pins_existing_sources_as_they_are(transactional_db: None) -> None:
    from django.apps import apps

    from tools_app.models import ToolSource

    migration = importlib.import_module("tools_app.migrations.0019_tool_definition_pins")
    listed = ToolSource.objects.create(kind="mcp", name="old", functions=[NOTE])
    never = ToolSource.objects.create(kind="mcp", name="new")
    migration.pin_existing(apps, None)
    listed.refresh_from_db()
    never.refresh_from_db()
    assert listed.functions[0]["pin"] == definition_pin(NOTE, "mcp")
    assert listed.pinned_at is not None
    assert never.pinned_at is None  # its first listing is pinned when it comes
