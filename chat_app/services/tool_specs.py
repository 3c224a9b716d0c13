"""The tool schemas a model request carries, built once per tool and kept lean.

A tool's schema depends only on its class: generating it (pydantic's JSON Schema plus the
strict-mode rewrite) took half the CPU of a round when it was redone for every request, so
it is cached, keyed weakly by class (a tool group rebuilt at run time gets fresh entries).

Every schema is sent with every request (or every request after tool search loaded it), so
what the model does not need is dropped here (``schema_slim``): examples, titles, comments, a
parameter description that only repeats the tool's, defaults that say nothing ("", [], {}),
and the line breaks of docstrings. Nothing that validation or the model's choice depends on
(types, bounds, enums, patterns, required) is touched; binding validates against the tool's
own pydantic model either way.
"""

from __future__ import annotations

import json
import re
import weakref
from typing import Any

from django.utils.translation import gettext_noop

from chat_app.providers import ToolSpec
from tools_app import selectors
from tools_app.i18n import schema_in, text_in
from tools_app.registry import BaseTool
from tools_app.services.binding import REASONING_FIELD

_SPECS: weakref.WeakKeyDictionary[type[BaseTool], dict[tuple[bool, bool, str], ToolSpec]] = (
    weakref.WeakKeyDictionary()
)
_SIZES: weakref.WeakKeyDictionary[type[BaseTool], dict[tuple[bool, bool, str], int]] = (
    weakref.WeakKeyDictionary()
)


def tool_specs(tools: list[type[BaseTool]], *, strict: bool, language: str = "") -> list[ToolSpec]:
    """``language``: of the descriptions (tools_app.i18n; names never change)."""
    with_reasoning = selectors.tools_with_reasoning()
    return [_tool_spec(tool, strict, tool.tool_name in with_reasoning, language) for tool in tools]


def spec_chars(spec: ToolSpec) -> int:
    """What a spec weighs in a request, as JSON (the estimate divides it into tokens)."""
    return len(spec.name) + len(spec.description) + len(json.dumps(spec.parameters))


def tool_specs_chars(tools: list[type[BaseTool]], *, strict: bool, language: str = "") -> int:
    """The size of these tools' specs, from the per-tool cache (tool search weighs the
    person's tools against the profile's budget every round)."""
    with_reasoning = selectors.tools_with_reasoning()
    total = 0
    for tool in tools:
        sizes = _SIZES.setdefault(tool, {})
        reasoning = tool.tool_name in with_reasoning
        key = (strict, reasoning, language)
        size = sizes.get(key)
        if size is None:
            size = spec_chars(_tool_spec(tool, strict, reasoning, language))
            sizes[key] = size
        total += size
    return total


def _tool_spec(tool: type[BaseTool], strict: bool, reasoning: bool, language: str) -> ToolSpec:
    cached = _SPECS.setdefault(tool, {})
    spec = cached.get((strict, reasoning, language))
    if spec is None:
        schema = tool.openai_schema(strict=strict)["function"]
        parameters = schema["parameters"]
        if reasoning:
            parameters = with_reasoning_field(parameters)
        # Translated first: the English text as written is the message id.
        description = one_line(text_in(schema["description"], language))
        spec = ToolSpec(
            name=tool.tool_name,
            description=description,
            parameters=schema_slim(schema_in(parameters, language), tool_description=description),
            strict=schema.get("strict", False),
        )
        cached[(strict, reasoning, language)] = spec
    return spec


REASONING_DESCRIPTION = gettext_noop("One sentence: why you call this tool now. Shown to the user.")


def with_reasoning_field(parameters: dict[str, Any]) -> dict[str, Any]:
    """Ask the model to say why it calls the tool; the card shows it (_reasoningForCall)."""
    out = dict(parameters)
    out["properties"] = {
        REASONING_FIELD: {
            "type": "string",
            "description": REASONING_DESCRIPTION,
        },
        **parameters.get("properties", {}),
    }
    out["required"] = [REASONING_FIELD, *parameters.get("required", [])]
    return out


# --- what the model does not need ----------------------------------------------------------
# Annotations only: JSON Schema validation ignores them, and the model gains nothing from them
# (an example repeats what the description says; titles repeat the property's name).
_ANNOTATIONS = ("examples", "example", "title", "$comment", "readOnly", "writeOnly", "deprecated")
# The strict rewrite folds a default into the description; these say nothing.
_EMPTY_DEFAULT = re.compile(r"\s*\(default: (?:''|\"\"|\[\]|\{\}|None)\)")
_SPACES = re.compile(r"\s+")


def one_line(text: str) -> str:
    """A docstring's line breaks and indentation as single spaces."""
    return _SPACES.sub(" ", text or "").strip()


def schema_slim(schema: dict[str, Any], *, tool_description: str = "") -> dict[str, Any]:
    """A copy of ``schema`` without what the model does not need (the module's docstring).
    Property names are never touched: a property called ``title`` or ``examples`` stays."""
    return _slim(schema, tool_description.strip())


def _slim(node: Any, tool_description: str) -> Any:
    if isinstance(node, list):
        return [_slim(n, tool_description) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _slim(prop, tool_description) for name, prop in value.items()}
        elif key == "description" and isinstance(value, str):
            text = one_line(_EMPTY_DEFAULT.sub("", value))
            if text and text != tool_description:
                out[key] = text
        else:
            out[key] = _slim(value, tool_description)
    return out
