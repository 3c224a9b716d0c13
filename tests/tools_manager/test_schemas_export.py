"""``export_tool_schemas`` and ``/api/tools/schemas.json``: the enabled tools, OpenAI format."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest
from django.core.management import call_command

from tools_app.models import ToolFunctionConfig
from tools_app.registry import TOOLS


def export(*args: str) -> dict:
    out = io.StringIO()
    call_command("export_tool_schemas", *args, stdout=out)
    return json.loads(out.getvalue())


def assert_valid_openai_tools(document: dict) -> None:
    assert document["tools"], "no tools exported"
    for tool in document["tools"]:
        assert tool["type"] == "function"
        function = tool["function"]
        assert function["name"] in TOOLS and function["description"]
        # Each parameters block is a JSON Schema that the metaschema accepts.
        jsonschema.Draft202012Validator.check_schema(function["parameters"])
        assert function["parameters"]["type"] == "object"


def test_it_prints_strict_openai_schemas_by_default(db):
    document = export()
    assert_valid_openai_tools(document)
    function = document["tools"][0]["function"]
    assert function["strict"] is True
    params = function["parameters"]
    assert params["additionalProperties"] is False
    assert params["required"] == list(params["properties"])


def test_no_strict_prints_plain_schemas(db):
    document = export("--no-strict")
    assert_valid_openai_tools(document)
    assert all("strict" not in t["function"] for t in document["tools"])


def test_it_writes_to_a_file_and_matches_the_api(tmp_path, user_client):
    target = tmp_path / "tools.json"
    call_command("export_tool_schemas", "-o", str(target), stdout=io.StringIO())
    from_file = json.loads(target.read_text())
    assert from_file == user_client.get("/api/tools/schemas.json").json()
    plain = user_client.get("/api/tools/schemas.json?strict=0").json()
    assert plain == export("--no-strict")


@pytest.mark.parametrize("disabled", ["function", "group"])
def test_disabled_tools_are_left_out(db, disabled):
    from tools_app.models import ToolGroupConfig

    if disabled == "function":
        ToolFunctionConfig.objects.create(name="current_time", enabled=False)
    else:
        ToolGroupConfig.objects.create(name="time", enabled=False)
    names = [t["function"]["name"] for t in export()["tools"]]
    assert "current_time" not in names
