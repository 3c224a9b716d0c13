"""Tool registry: schemas the providers accept, validation errors the model can act on."""

from __future__ import annotations

import jsonschema
import pytest
from pydantic import BaseModel, Field

from tools_app.registry import (
    TOOLS,
    BaseTool,
    override_activity,
    resolve_activity,
    unregister_tool,
)
from tools_app.services.binding import format_validation_error


class _Nested(BaseModel):
    key: str
    values: list[int] = Field(default_factory=list)


@pytest.fixture
def sample_tool():
    # Defined (and so registered) only while a test uses it: a module-level class would stay
    # in the registry, offered to the model and listed in the Tools Manager, for every test.
    class SampleSchemaTool(BaseTool, group="time"):
        """A tool used only to exercise schema generation."""

        path: str = Field(description="Where.")
        limit: int = Field(10, ge=1, description="How many.")
        flags: list[str] | None = None
        nested: _Nested | None = None

    yield SampleSchemaTool
    unregister_tool("sample_schema_tool")


def all_objects(schema):
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from all_objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from all_objects(value)


def test_the_name_is_derived_from_the_class_name(sample_tool):
    assert sample_tool.tool_name == "sample_schema_tool"
    assert TOOLS["sample_schema_tool"] is sample_tool


@pytest.mark.parametrize("strict", [True, False])
def test_every_schema_is_valid_json_schema(strict, sample_tool):
    for tool in TOOLS.values():
        schema = tool.openai_schema(strict=strict)["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(schema)
        assert "$defs" not in schema and "$ref" not in str(schema)


def test_strict_schema_has_the_openai_strict_shape(sample_tool):
    fn = sample_tool.openai_schema(strict=True)["function"]
    assert fn["strict"] is True
    assert fn["description"] == "A tool used only to exercise schema generation."
    for obj in all_objects(fn["parameters"]):
        assert obj["additionalProperties"] is False
        assert sorted(obj["required"]) == sorted(obj["properties"])
    props = fn["parameters"]["properties"]
    assert {"type": "null"} in props["limit"]["anyOf"]  # optional → nullable in strict mode
    assert "default" not in str(fn["parameters"])


def test_plain_schema_lists_only_truly_required_fields(sample_tool):
    schema = sample_tool.anthropic_schema()["input_schema"]
    assert schema["required"] == ["path"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["limit"]["default"] == 10


def test_validation_errors_name_the_field_and_the_problem(sample_tool):
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as info:
        sample_tool.model_validate({"limit": 0, "bogus": 1})
    text = format_validation_error("sample_schema_tool", info.value)
    assert "'path' is required" in text
    assert "'limit'" in text and "greater than or equal to 1" in text
    assert "'bogus' is not an argument of sample_schema_tool" in text


def test_an_activity_can_be_swapped_without_touching_the_schema():
    tool = TOOLS["current_time"]
    before = tool.openai_schema()
    with override_activity("current_time", lambda args, ctx: {"fake": True}):
        assert resolve_activity(tool)(None, None) == {"fake": True}
    assert tool.openai_schema() == before
    assert resolve_activity(tool).__name__ == "current_time"


PLATFORM_TOOLS = {
    "memory": [
        "memory_core_delete",
        "memory_core_get",
        "memory_core_update",
        "memory_save",
        "memory_search",
    ],
    "docs": ["docs_list", "docs_read", "docs_search"],
    "skills": ["skill_list", "skill_load"],
    "messaging": ["send_message"],
    "schedules": ["schedule_add", "schedule_list", "schedule_remove"],
    "subagents": ["subagent_spawn"],
}


@pytest.mark.parametrize("group", sorted(PLATFORM_TOOLS))
def test_platform_tools_have_strict_openai_schemas(group):
    from tools_app.registry import GROUPS

    assert sorted(t.tool_name for t in GROUPS[group].tools) == PLATFORM_TOOLS[group]
    for tool in GROUPS[group].tools:
        fn = tool.openai_schema(strict=True)["function"]
        assert fn.get("strict") is True, tool.tool_name
        jsonschema.Draft202012Validator.check_schema(fn["parameters"])
        for obj in all_objects(fn["parameters"]):
            assert obj["additionalProperties"] is False
            assert sorted(obj["required"]) == sorted(obj["properties"])
        # The example a Test button starts from is valid for the tool's own schema.
        tool.model_validate(tool.example())


def test_the_contract_argument_names():
    def args(name):
        return list(TOOLS[name].model_fields)

    assert args("memory_save") == ["content", "source"]
    assert args("memory_search") == ["query", "top_k"]
    assert args("memory_core_get") == []
    assert args("memory_core_update") == ["section", "key", "value"]
    assert args("memory_core_delete") == ["section", "key"]
    assert args("docs_list") == [] and args("docs_search") == ["query", "top_k"]
    assert args("docs_read") == ["path"]
    assert args("skill_list") == [] and args("skill_load") == ["name"]
    assert args("send_message") == ["channel", "chat_id", "text"]
    assert args("schedule_add") == ["name", "cron", "message", "model", "inject_into"]
    assert args("schedule_list") == [] and args("schedule_remove") == ["name"]
    assert args("subagent_spawn") == ["name", "message", "model", "inject_into"]
    for name in ("schedule_add", "subagent_spawn"):
        assert TOOLS[name].model_fields["model"].default is None
        assert TOOLS[name].model_fields["inject_into"].default is None
    assert TOOLS["memory_search"].model_fields["top_k"].default == 10
    assert TOOLS["docs_search"].model_fields["top_k"].default == 5
    assert TOOLS["memory_save"].model_fields["source"].default == "manual"


def test_the_seed_schemas_of_the_dev_and_research_tools():
    """Seed 000's coding-agent tools and seed 004's research tools, field for field."""

    def props(name):
        return TOOLS[name].openai_schema(strict=False)["function"]["parameters"]

    run_tests = props("run_tests")
    assert list(run_tests["properties"]) == ["command", "cwd"] and run_tests["required"] == []
    assert run_tests["properties"]["command"]["default"] == "pytest -q --tb=short"
    assert run_tests["properties"]["cwd"]["default"] == "."
    listing = props("list_directory")
    assert listing["properties"]["recursive"]["default"] is False
    assert props("read_file")["required"] == ["path"]
    assert props("write_file")["required"] == ["path", "content"]
    assert props("git_add")["required"] == ["files"] and props("git_commit")["required"] == [
        "message"
    ]
    assert props("git_status")["properties"] == {}
    search = props("web_search")
    assert list(search["properties"]) == ["reasoning", "query", "max_results"]
    assert search["required"][0] == "reasoning"
    assert (
        search["properties"]["max_results"]["minimum"],
        search["properties"]["max_results"]["maximum"],
    ) == (1, 10)
    assert search["properties"]["max_results"]["default"] == 5
    extract = props("extract_page_content")
    assert list(extract["properties"]) == ["reasoning", "urls"]
    assert extract["required"] == ["reasoning", "urls"]
    assert (
        extract["properties"]["urls"]["minItems"],
        extract["properties"]["urls"]["maxItems"],
    ) == (1, 5)
    strict = TOOLS["web_search"].openai_schema(strict=True)["function"]["parameters"]
    assert strict["properties"]["reasoning"]["type"] == "string"  # required, not nullable
    # A person's slash command may still leave the reasoning out.
    assert TOOLS["web_search"].model_validate({"query": "x"}).reasoning == ""
