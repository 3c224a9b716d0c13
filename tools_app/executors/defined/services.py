"""Defining tools from a JSON Schema: read a definition, check it, store it as a tool source
of kind ``schema`` (created, or its functions replaced and pinned again).

A definition is JSON (or YAML) in one of two shapes:

* ours: ``{"name": "weather", "label": ..., "description": ..., "tools": [FUNCTION, ...]}``
  where FUNCTION is ``{"name", "description", "input_schema", "output_schema"?, "bind"?}``
  and ``bind`` is ``{"tool": "http_request", "arguments": {"url": "{city_url}", "method":
  "GET"}}`` (``"{x}"``: this call's argument x; anything else: a constant);
* seed 001's: one schema (or a list) with the special properties ``_tool`` (its ``const`` is
  the name), ``_output`` (the output schema) and ``_activity`` (an existing tool to run, every
  argument passed as is); the other properties are the arguments.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import yaml
from django.db import transaction

from tools_app.models import ToolSource
from tools_app.registry import get_tool
from tools_app.services.pins import functions_named, pinned
from tools_app.services.sources import SourceError, check_source_name, source_create

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_SPECIAL = ("_tool", "_output", "_activity", "_reasoningForCall")


class DefinitionError(ValueError):
    pass


def definition_read(text: str) -> dict[str, Any]:
    """Our shape from either shape; ``DefinitionError`` saying where it is wrong."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise DefinitionError(f"not valid JSON or YAML: {exc}") from None
    if isinstance(data, dict) and "tools" in data:
        shaped = dict(data)
    elif isinstance(data, dict) and "properties" in data:
        shaped = {"tools": [data]}
    elif isinstance(data, list):
        shaped = {"tools": data}
    else:
        raise DefinitionError('expected {"tools": [...]} or a JSON Schema with a _tool property')
    unknown = set(shaped) - {"name", "label", "description", "tools"}
    if unknown:
        raise DefinitionError(f"unknown keys {sorted(unknown)}")
    if not isinstance(shaped["tools"], list) or not shaped["tools"]:
        raise DefinitionError("tools: expected a non-empty list")
    functions = [_function(i, f) for i, f in enumerate(shaped["tools"], start=1)]
    names = [f["name"] for f in functions]
    if len(set(names)) != len(names):
        raise DefinitionError(f"a tool name is given twice: {names}")
    source = str(shaped.get("name") or names[0]).lower().replace("_", "-")
    return {
        "name": source,
        "label": str(shaped.get("label") or ""),
        "description": str(shaped.get("description") or ""),
        "functions": functions,
    }


def _function(index: int, raw: Any) -> dict[str, Any]:
    where = f"tools[{index}]"
    if not isinstance(raw, dict):
        raise DefinitionError(f"{where}: expected an object")
    if "input_schema" not in raw and "properties" in raw:
        raw = _from_seed(where, raw)
    unknown = set(raw) - {"name", "description", "input_schema", "output_schema", "bind"}
    if unknown:
        raise DefinitionError(f"{where}: unknown keys {sorted(unknown)}")
    name = str(raw.get("name") or "")
    if not NAME.match(name):
        raise DefinitionError(f"{where}: the name must be 1-64 letters, digits, _ or -")
    where = f"tool {name!r}"
    existing = get_tool(name)
    if existing is not None and not getattr(existing, "tool_defined", False):
        raise DefinitionError(f"{where}: the name is taken by a built-in or imported tool")
    schema = raw.get("input_schema") or {"type": "object", "properties": {}}
    _check_schema(f"{where}: input_schema", schema)
    if schema.get("type") != "object":
        raise DefinitionError(f'{where}: input_schema must have "type": "object"')
    output = raw.get("output_schema") or {}
    if output:
        _check_schema(f"{where}: output_schema", output)
    function: dict[str, Any] = {
        "name": name,
        "description": str(raw.get("description") or "").strip(),
        "input_schema": schema,
    }
    if not function["description"]:
        raise DefinitionError(f"{where}: a description is needed (the model reads it)")
    if output:
        function["output_schema"] = output
    if raw.get("bind"):
        function["bind"] = _bind(where, raw["bind"], schema)
    return function


def _from_seed(where: str, raw: dict[str, Any]) -> dict[str, Any]:
    properties = dict(raw.get("properties") or {})
    tool = properties.get("_tool") or {}
    name = tool.get("const") if isinstance(tool, dict) else None
    if not name:
        raise DefinitionError(f"{where}: the _tool property needs a const (the tool's name)")
    output = properties.get("_output") or {}
    activity = properties.get("_activity") or {}
    for key in _SPECIAL:
        properties.pop(key, None)
    required = [r for r in raw.get("required") or [] if r not in _SPECIAL]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    out: dict[str, Any] = {
        "name": name,
        "description": raw.get("description") or "",
        "input_schema": schema,
    }
    if output:
        out["output_schema"] = output
    bound = activity.get("const") if isinstance(activity, dict) else activity
    if bound:
        out["bind"] = {"tool": bound, "arguments": {k: "{" + k + "}" for k in properties}}
    return out


def _check_schema(where: str, schema: Any) -> None:
    if not isinstance(schema, dict):
        raise DefinitionError(f"{where}: expected a JSON Schema object")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        path = "/".join(str(p) for p in exc.path)
        raise DefinitionError(
            f"{where}: not a valid JSON Schema ({path or 'top'}: {exc.message})"
        ) from None


def _bind(where: str, bind: Any, schema: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(bind, dict) or not isinstance(bind.get("tool"), str):
        raise DefinitionError(f'{where}: bind must be {{"tool": NAME, "arguments": {{...}}}}')
    target = get_tool(bind["tool"])
    if target is None:
        raise DefinitionError(f"{where}: bind names no tool called {bind['tool']!r}")
    if getattr(target, "tool_defined", False):
        raise DefinitionError(f"{where}: a defined tool cannot run another defined tool")
    arguments = bind.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise DefinitionError(f"{where}: bind.arguments must be an object")
    known = set((schema.get("properties") or {}).keys())
    for key, value in arguments.items():
        reference = isinstance(value, str) and value.startswith("{") and value.endswith("}")
        if reference and value[1:-1] not in known:
            raise DefinitionError(
                f"{where}: bind.arguments.{key} refers to {value}, which is not an argument"
            )
    return {"tool": target.tool_name, "arguments": arguments}


def tools_define(text: str, *, user: Any) -> tuple[ToolSource, bool]:
    """Create the definition's source, or replace the functions of the one of that name (its
    grants and per-function settings stay). Returns (source, created)."""
    found = definition_read(text)
    existing = ToolSource.objects.filter(name=found["name"]).first()
    if existing is not None and existing.kind != ToolSource.Kind.SCHEMA:
        raise DefinitionError(f"a tool source named {found['name']!r} exists and is not defined")
    if existing is None:
        try:
            check_source_name(found["name"], kind=ToolSource.Kind.SCHEMA)
            source = source_create(
                kind=ToolSource.Kind.SCHEMA,
                name=found["name"],
                label=found["label"],
                description=found["description"],
                config={},
                secrets={},
                settings={},
                functions=found["functions"],
                user=user,
            )
        except SourceError as exc:
            raise DefinitionError(str(exc)) from None
        return source, True
    with transaction.atomic():
        source = ToolSource.objects.select_for_update().get(pk=existing.pk)
        source.functions = pinned(functions_named(source, found["functions"]), source.kind)
        source.label = found["label"] or source.label
        source.description = found["description"] or source.description
        source.revision += 1
        source.review = []
        source.save()
    return source, False
