"""The form generator: every settings type executors declare, and Test forms from schemas."""

from __future__ import annotations

from typing import Literal

import pytest
from django.http import QueryDict
from pydantic import Field

from tests.helpers import GUARD_FORM_DEFAULTS, GUARD_FORM_KINDS
from tools_app.manager.forms import SettingsForm, ToolTestForm, field_spec, schema_specs
from tools_app.registry import TOOLS, GroupSettings
from tools_app.schema import plain_schema


class RichSettings(GroupSettings):
    """Test-only: the kinds of fields the shell/file/http/docker groups use."""

    allowed_commands: list[str] = Field(
        default_factory=lambda: ["ls", "cat"], description="Commands that may run."
    )
    max_output_bytes: int = Field(65_536, ge=1024, le=10_485_760, description="Output cap.")
    poll_ms: int = Field(100, ge=10)
    memory_mb: int = Field(512, json_schema_extra={"unit": "MiB"})
    cpu_share: float = Field(0.5, gt=0, le=4)
    network: bool = Field(False, description="Allow network access.")
    sandbox_backend: Literal["auto", "docker", "bubblewrap", "none"] = "auto"
    workdir: str = Field("/workspace", description="Where commands start.")
    note: str | None = None
    retries: int | None = Field(None, ge=0)
    headers: dict[str, str] = Field(default_factory=dict)


def post(**values: str) -> QueryDict:
    data = QueryDict(mutable=True)
    for key, value in values.items():
        data[key] = value
    return data


def valid_post(**overrides: str) -> QueryDict:
    values = {
        "timeout_seconds": "30",
        "calls_per_minute": "0",
        "allowed_commands": "ls\ncat",
        "max_output_bytes": "65536",
        "poll_ms": "100",
        "memory_mb": "512",
        "cpu_share": "0.5",
        "sandbox_backend": "auto",
        "workdir": "/workspace",
        "note": "",
        "retries": "",
        "headers": "{}",
        **GUARD_FORM_DEFAULTS,
    }
    values.update(overrides)
    return post(**values)


def specs():
    return {s.name: s for s in schema_specs(plain_schema(RichSettings))}


def test_it_maps_each_type_to_an_input_kind():
    kinds = {name: spec.kind for name, spec in specs().items()}
    assert kinds == {
        "timeout_seconds": "integer",
        "calls_per_minute": "integer",
        "explain_why": "boolean",
        "allowed_commands": "lines",
        "max_output_bytes": "integer",
        "poll_ms": "integer",
        "memory_mb": "integer",
        "cpu_share": "number",
        "network": "boolean",
        "sandbox_backend": "choice",
        "workdir": "text",
        "note": "text",
        "retries": "integer",
        "headers": "json",
        **GUARD_FORM_KINDS,
    }


def test_it_derives_units_from_suffixes_and_schema_extra():
    s = specs()
    assert (s["timeout_seconds"].unit, s["timeout_seconds"].label) == ("s", "Timeout")
    assert (s["max_output_bytes"].unit, s["max_output_bytes"].label) == ("bytes", "Max output")
    assert s["poll_ms"].unit == "ms"
    assert s["memory_mb"].unit == "MiB"  # explicit unit beats the suffix's "MB"
    assert s["workdir"].unit == ""


def test_it_shows_descriptions_and_ranges_as_help():
    s = specs()
    assert s["allowed_commands"].help == "Commands that may run."
    assert s["max_output_bytes"].range_text == "1,024–10,485,760 bytes"
    assert s["poll_ms"].range_text == "≥ 10 ms"
    assert s["cpu_share"].range_text == "0–4"
    assert s["retries"].nullable and s["note"].nullable


def test_it_prefills_current_values_in_input_form():
    current = RichSettings(allowed_commands=["git", "make"], network=True)
    form = SettingsForm(model=RichSettings, current=current)
    assert form["allowed_commands"].value() == "git\nmake"
    assert form["network"].value() is True
    assert form["headers"].value() == "{}"
    html = str(form["network"])
    assert 'role="switch"' in html and "checked" in html
    assert 'min="1024"' in str(form["max_output_bytes"])
    assert '<option value="docker">' in str(form["sandbox_backend"])


def test_it_converts_valid_input_into_the_settings_model():
    form = SettingsForm(
        valid_post(
            allowed_commands="  git \n\nmake\n",
            network="on",
            sandbox_backend="none",
            note="",
            retries="3",
            headers='{"X-A": "1"}',
        ),
        model=RichSettings,
    )
    assert form.is_valid(), form.errors
    settings = form.settings
    assert settings.allowed_commands == ["git", "make"]  # trimmed, blank lines dropped
    assert settings.network is True
    assert settings.sandbox_backend == "none"
    assert settings.note is None and settings.retries == 3
    assert settings.headers == {"X-A": "1"}


def test_an_unchecked_switch_means_false():
    form = SettingsForm(valid_post(), model=RichSettings, current=RichSettings(network=True))
    assert form.is_valid(), form.errors
    assert form.settings.network is False


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_output_bytes", "10", "greater than or equal to 1024"),
        ("cpu_share", "0", "greater than 0"),
        ("timeout_seconds", "abc", "whole number"),
        ("timeout_seconds", "", "required"),
        ("sandbox_backend", "chroot", "valid choice"),
        ("headers", "{nope", "Not valid JSON"),
        ("retries", "-1", "greater than or equal to 0"),
    ],
)
def test_it_puts_errors_next_to_the_field(field, value, message):
    form = SettingsForm(valid_post(**{field: value}), model=RichSettings)
    assert not form.is_valid()
    assert list(form.errors) == [field]
    assert message in form.errors[field][0]
    assert form[field].value() == value  # what the admin typed is kept


def test_it_names_the_line_of_a_bad_list_item():
    class IntList(GroupSettings):
        ports: list[int] = Field(default_factory=list)

    form = SettingsForm(
        post(timeout_seconds="5", calls_per_minute="0", ports="80\nx", **GUARD_FORM_DEFAULTS),
        model=IntList,
    )
    assert not form.is_valid()
    assert form.errors["ports"][0].startswith("Line 2:")


def test_a_test_form_is_prefilled_with_the_example_and_omits_blanks():
    tool = TOOLS["current_time"]
    schema = tool.anthropic_schema()["input_schema"]
    form = ToolTestForm(schema=schema, example=tool.example())
    assert form["timezone"].value() == "Europe/Berlin"
    blank = ToolTestForm(post(**{"arg-timezone": ""}), schema=schema, example=tool.example())
    assert blank.is_valid() and blank.arguments() == {}  # the default applies in binding
    given = ToolTestForm(post(**{"arg-timezone": "Asia/Tokyo"}), schema=schema, example={})
    assert given.is_valid() and given.arguments() == {"timezone": "Asia/Tokyo"}


def test_raw_json_wins_over_the_fields_and_goes_through_unparsed():
    schema = {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
    }
    data = post(**{"arg-count": "not a number", "arg-raw_json__": '{"count": 3, '})
    form = ToolTestForm(data, schema=schema, example={})
    assert form.is_valid()
    assert form.arguments() == '{"count": 3,'  # binding reports the broken JSON, as for a model


def test_a_test_form_handles_optional_booleans_arrays_and_objects():
    schema = {
        "type": "object",
        "properties": {
            "recursive": {"type": "boolean"},
            "paths": {"type": "array", "items": {"type": "string"}},
            "limits": {"type": "object"},
            "mode": {"anyOf": [{"enum": ["r", "w"], "type": "string"}, {"type": "null"}]},
            "content": {"type": "string"},
        },
        "required": ["paths"],
    }
    form = ToolTestForm(
        post(
            **{
                "arg-recursive": "",
                "arg-paths": "a.txt\nb.txt",
                "arg-limits": '{"n": 1}',
                "arg-mode": "w",
                "arg-content": "line 1\nline 2\n",
            }
        ),
        schema=schema,
        example={},
    )
    assert form.is_valid(), form.errors
    assert form.arguments() == {
        "paths": ["a.txt", "b.txt"],
        "limits": {"n": 1},
        "mode": "w",
        "content": "line 1\nline 2\n",  # multi-line text kept exactly
    }
    assert "<textarea" in str(form["content"])
    assert "not given" in str(form["recursive"])  # a checkbox could not say "unset"


def test_field_spec_reads_nullable_type_lists():
    spec = field_spec("limit", {"type": ["integer", "null"], "minimum": 1}, required=False)
    assert spec.kind == "integer" and spec.nullable and spec.minimum == 1
