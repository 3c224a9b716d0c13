"""What each schema sent to the model drops (examples, titles, a description that repeats the
tool's, empty defaults, docstring line breaks) leaves a valid JSON Schema that accepts the
same arguments: every registered tool, both shapes (strict for native OpenAI calls, plain for
Anthropic and the text fallback)."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from chat_app.services.tool_specs import schema_slim, tool_specs
from tools_app import selectors

pytestmark = [pytest.mark.django_db]

ANNOTATIONS = {"examples", "title", "$comment"}


def keywords(node: object, *, inside_properties: bool = False) -> set[str]:
    """The schema keywords used anywhere (property names are not keywords)."""
    out: set[str] = set()
    if isinstance(node, list):
        for item in node:
            out |= keywords(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if not inside_properties:
                out.add(key)
            out |= keywords(value, inside_properties=key == "properties" and not inside_properties)
    return out


@pytest.mark.parametrize("strict", [True, False])
def test_every_tools_schema_stays_valid_and_accepts_its_example(strict):
    tools = list(selectors.registered_tools().values())
    assert len(tools) > 20
    for tool, spec in zip(tools, tool_specs(tools, strict=strict), strict=True):
        Draft202012Validator.check_schema(spec.parameters)
        assert not keywords(spec.parameters) & ANNOTATIONS, tool.tool_name
        assert "\n" not in spec.description
        example = tool.example()
        try:
            tool.model_validate(example)
        except ValueError:  # an example without every required argument: nothing to compare
            example = None
        if example is None:
            continue
        if spec.strict:  # strict mode asks for every key, null for "not given"
            example = {k: example.get(k) for k in spec.parameters["properties"]}
        errors = [e.message for e in Draft202012Validator(spec.parameters).iter_errors(example)]
        assert not errors, (tool.tool_name, errors)


def test_it_drops_annotations_and_repeats_but_keeps_what_validation_needs():
    schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "title": {"type": "string", "title": "Title", "description": "The page title."},
            "query": {
                "type": "string",
                "minLength": 1,
                "examples": ["approval"],
                "description": "Search the docs.",
            },
            "mode": {
                "anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}],
                "description": "How.  (default: '')",
            },
            "tags": {"type": "array", "items": {"type": "string", "examples": ["x"]}},
        },
        "required": ["title", "query", "mode", "tags"],
    }
    slim = schema_slim(schema, tool_description="Search the docs.")
    assert slim["properties"]["title"] == {"type": "string", "description": "The page title."}
    assert slim["properties"]["query"] == {"type": "string", "minLength": 1}
    assert slim["properties"]["mode"]["description"] == "How."
    assert slim["properties"]["mode"]["anyOf"][0]["enum"] == ["a", "b"]
    assert slim["properties"]["tags"]["items"] == {"type": "string"}
    assert slim["required"] == schema["required"] and slim["additionalProperties"] is False
    Draft202012Validator.check_schema(slim)
    assert "examples" in json.dumps(schema)  # the tool's own schema is not changed
