"""Tools defined at run time from a JSON Schema (seed 001): ``manage.py tools define FILE``;
latent or bound to an existing tool; governed like any other tool — grants (of the definition
and of the tool it runs), the bound tool's policy, approvals, the audit log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command

from tests.tools.calls import ok, run_tool
from tools_app.executors.defined.services import DefinitionError, definition_read
from tools_app.models import AuditRecord, ToolFunctionConfig, ToolGrant, ToolSource
from tools_app.registry import is_latent
from tools_app.schemas_file import built_in
from tools_app.selectors import tool_named as get_tool
from tools_app.services.grants import everyone_group, granted_tools

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.grants]

DEFINITION = {
    "name": "helpers",
    "label": "Team helpers",
    "tools": [
        {
            "name": "clock_in",
            "description": "The time in a city's timezone.",
            "input_schema": {
                "type": "object",
                "properties": {"tz": {"type": "string", "description": "IANA timezone"}},
                "required": ["tz"],
            },
            "bind": {"tool": "current_time", "arguments": {"timezone": "{tz}"}},
        },
        {
            "name": "fetch_page",
            "description": "GET a page.",
            "input_schema": {
                "type": "object",
                "properties": {"url": {"type": "string"}},
                "required": ["url"],
            },
            "bind": {"tool": "http_request", "arguments": {"url": "{url}", "method": "GET"}},
        },
        {
            "name": "read_note",
            "description": "Read a note of the workspace.",
            "input_schema": {
                "type": "object",
                "properties": {"note": {"type": "string"}},
                "required": ["note"],
            },
            "bind": {"tool": "file_read", "arguments": {"path": "{note}"}},
        },
        {
            "name": "guess_mood",
            "description": "Guess the mood of a text (no implementation: latent).",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "output_schema": {"type": "object", "properties": {"mood": {"type": "string"}}},
        },
    ],
}
# Seed 001's own example, as written there.
SEED_SENTIMENT = {
    "type": "object",
    "description": "Анализирует настроение текста",
    "properties": {
        "_tool": {"type": "string", "const": "sentimentAnalysis"},
        "text": {"type": "string", "description": "Текст для анализа"},
        "_output": {
            "type": "object",
            "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number"}},
        },
    },
}


def define(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(data, ensure_ascii=False))
    call_command("tools", "define", str(path))
    return str(path)


@pytest.fixture
def defined(tmp_path, capsys) -> ToolSource:
    define(tmp_path, DEFINITION)
    assert "defined 4 tool(s) in schema_helpers" in capsys.readouterr().out
    return ToolSource.objects.get(name="helpers")


def test_the_command_registers_the_tools_governed_like_any_other(defined):
    assert defined.kind == "schema" and all(f.get("pin") for f in defined.functions)
    clock = get_tool("clock_in")
    assert clock is not None and clock.tool_group == "schema_helpers"
    assert clock.openai_schema()["function"]["parameters"]["required"] == ["tz"]
    assert not is_latent(clock) and is_latent(get_tool("guess_mood"))
    assert not built_in(clock)  # kept out of docs/tool-schemas.json


def test_a_bound_tool_runs_the_tool_it_names_with_the_mapped_arguments(defined, staff_user):
    result = ok(run_tool("clock_in", user=staff_user, tz="Asia/Tokyo"))
    assert result["timezone"] == "Asia/Tokyo"
    record = AuditRecord.objects.filter(tool="clock_in").latest("pk")
    assert record.status == "succeeded"


def test_a_member_not_granted_the_definition_is_denied(defined, user):
    call = run_tool("clock_in", user=user, tz="UTC")
    assert call.status == "denied" and "not granted" in call.error


def test_granting_the_definition_does_not_grant_the_tool_it_runs(defined, user):
    group = Group.objects.create(name="Team")
    user.groups.add(group)
    ToolGrant.objects.create(group=group, kind="source", name="helpers")
    assert "http_request" not in (granted_tools(user.pk) or {"http_request"})
    call = run_tool("fetch_page", user=user, url="https://example.com/")
    assert call.status == "denied"
    assert call.error == (
        "policy: fetch_page runs http_request: http_request is not granted to you — ask an admin"
    )
    # Granted both, it runs through (current_time is the member's already, or granted here).
    ToolGrant.objects.get_or_create(group=group, kind="function", name="current_time")
    assert ok(run_tool("clock_in", user=user, tz="UTC"))["timezone"] == "UTC"


@pytest.mark.parametrize("note", ["../../etc/passwd", "/etc/passwd", "a/../../../x"])
def test_the_bound_tools_policy_applies_to_its_arguments(defined, staff_user, note):
    call = run_tool("read_note", user=staff_user, note=note)
    assert call.status == "denied" and call.error.startswith("policy: ")


def test_its_own_schema_is_checked_before_anything(defined, staff_user):
    call = run_tool("clock_in", user=staff_user, zone="UTC")
    assert call.status == "failed" and "tz" in call.error


def test_approval_applies_to_a_defined_tool(defined, staff_user):
    ToolFunctionConfig.objects.create(name="clock_in", approval_mode="requester")
    call = run_tool("clock_in", user=staff_user, tz="UTC")
    assert call.status == "awaiting_approval"


def test_a_latent_tool_is_recorded_and_says_it_has_no_implementation(defined, staff_user):
    call = run_tool("guess_mood", user=staff_user, text="I love it")
    assert call.status == "failed"
    assert "has no activity" in call.error and "latently" in call.error
    assert AuditRecord.objects.filter(tool="guess_mood").exists()


def test_seed_001s_own_shape_defines_a_latent_tool(tmp_path, capsys):
    define(tmp_path, SEED_SENTIMENT)
    tool = get_tool("sentimentAnalysis")
    assert tool is not None and is_latent(tool)
    assert list(tool.openai_schema()["function"]["parameters"]["properties"]) == ["text"]
    assert tool.output_schema()["properties"]["confidence"] == {"type": "number"}


def test_redefining_replaces_the_functions_and_keeps_the_grants(defined, tmp_path, user):
    ToolGrant.objects.get_or_create(group=everyone_group(), kind="source", name="helpers")
    smaller = {**DEFINITION, "tools": DEFINITION["tools"][:1]}
    define(tmp_path, smaller)
    source = ToolSource.objects.get(name="helpers")
    assert [f["name"] for f in source.functions] == ["clock_in"]
    run_tool("clock_in", user=user, tz="UTC")  # binds: the registry was synced
    assert get_tool("fetch_page") is None
    assert ToolGrant.objects.filter(kind="source", name="helpers").exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"tools": [{"name": "x", "description": "d", "input_schema": {"type": "nope"}}]},
            "not a valid JSON Schema",
        ),
        (
            {"tools": [{"name": "x", "description": "d", "input_schema": {"type": "string"}}]},
            '"type": "object"',
        ),
        ({"tools": [{"name": "shell_exec", "description": "d"}]}, "taken by a built-in"),
        ({"tools": [{"name": "x y", "description": "d"}]}, "1-64 letters"),
        ({"tools": [{"name": "x"}]}, "a description is needed"),
        (
            {"tools": [{"name": "x", "description": "d", "bind": {"tool": "nope"}}]},
            "no tool called 'nope'",
        ),
        (
            {
                "tools": [
                    {
                        "name": "x",
                        "description": "d",
                        "bind": {"tool": "current_time", "arguments": {"timezone": "{tz}"}},
                    }
                ]
            },
            "refers to {tz}, which is not an argument",
        ),
        ({"tools": [{"name": "x", "description": "d", "run": "rm -rf /"}]}, "unknown keys"),
        ({"properties": {"text": {"type": "string"}}}, "_tool property needs a const"),
    ],
)
def test_a_wrong_definition_is_refused_saying_where(tmp_path, data, message):
    with pytest.raises(DefinitionError, match=message.replace("{", r"\{").replace("}", r"\}")):
        definition_read(json.dumps(data))
    with pytest.raises(CommandError):
        define(tmp_path, data)
    assert not ToolSource.objects.exists()
