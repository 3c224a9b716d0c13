"""Turn a Pydantic tool model into the JSON Schemas the providers want.

``strict_schema`` follows OpenAI's strict function-calling shape: every object closes with
``additionalProperties: false`` and lists *all* its properties as required, optional ones made
nullable (strict mode has no optional keys). Validation stays lenient: a missing optional
argument still takes its default, so models that ignore strict mode are not punished.
``plain_schema`` (Anthropic ``input_schema``, the text-fallback prompt) keeps the real required
list and defaults.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

# Keywords OpenAI strict mode rejects; their meaning is folded into the description.
_STRICT_UNSUPPORTED = ("default", "examples", "title")


def _base(model: type[BaseModel]) -> dict[str, Any]:
    raw = model.model_json_schema()
    defs = raw.pop("$defs", {})
    schema = _inline(raw, defs)
    schema.pop("description", None)  # the docstring: already the function's description
    return schema


def plain_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = _base(model)
    _walk(schema, strict=False)
    return schema


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = _base(model)
    _walk(schema, strict=True)
    return schema


def supports_strict(model: type[BaseModel]) -> bool:
    """Strict mode cannot express free-form values (``dict[str, str]``, ``Any``): such tools
    are offered with a plain schema instead."""
    return not _free_form(_base(model))


def _free_form(node: Any) -> bool:
    if isinstance(node, list):
        return any(_free_form(n) for n in node)
    if not isinstance(node, dict):
        return False
    if node == {} or isinstance(node.get("additionalProperties"), dict):
        return True
    if (
        node.get("type") == "object"
        and not node.get("properties")
        and (node.get("additionalProperties") is not False)
    ):
        return True
    children = list(node.get("properties", {}).values())
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in node:
            children.append(node[key])
    return any(_free_form(c) for c in children)


def _inline(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, dict):
        if "$ref" in node:
            name = node["$ref"].rsplit("/", 1)[-1]
            target = copy.deepcopy(defs[name])
            extra = {k: v for k, v in node.items() if k != "$ref"}
            target.update(extra)
            return _inline(target, defs)
        return {k: _inline(v, defs) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, defs) for v in node]
    return node


def _walk(node: Any, *, strict: bool) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, strict=strict)
        return
    if not isinstance(node, dict):
        return
    node.pop("title", None)
    if strict:
        default = node.pop("default", None)
        if default is not None and "description" in node:
            node["description"] = f"{node['description']} (default: {default!r})"
        node.pop("examples", None)
    if isinstance(node.get("additionalProperties"), dict):  # a map (dict[str, X]): keep it
        _walk(node["additionalProperties"], strict=strict)
        return
    if node.get("type") == "object" or "properties" in node:
        node.setdefault("type", "object")
        props: dict[str, Any] = node.setdefault("properties", {})
        node["additionalProperties"] = False
        required = set(node.get("required", []))
        if strict:
            for key, prop in props.items():
                if key not in required and not _is_nullable(prop):
                    props[key] = _nullable(prop)
            node["required"] = list(props)
        else:
            node["required"] = [k for k in props if k in required]
    for key in ("properties",):
        for child in node.get(key, {}).values():
            _walk(child, strict=strict)
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in node:
            _walk(node[key], strict=strict)


def _is_nullable(prop: dict[str, Any]) -> bool:
    if prop.get("type") == "null":
        return True
    if isinstance(prop.get("type"), list) and "null" in prop["type"]:
        return True
    return any(_is_nullable(p) for p in prop.get("anyOf", []) if isinstance(p, dict))


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    description = prop.pop("description", None)
    wrapped: dict[str, Any] = {"anyOf": [prop, {"type": "null"}]}
    if description:
        wrapped["description"] = description
    return wrapped


# --- JSON Schemas that come from outside (MCP servers, OpenAPI documents) ------------------
_OPENAPI_ONLY = ("discriminator", "xml", "externalDocs", "example", "readOnly", "writeOnly")


def normalise_json_schema(schema: Any) -> dict[str, Any]:
    """An imported input schema as a JSON Schema object: OpenAPI 3.0's ``nullable`` spelled
    as a type union, OpenAPI-only keywords dropped, always an object at the top."""
    node = _normalise(copy.deepcopy(schema) if isinstance(schema, dict) else {})
    if node.get("type") != "object" and "properties" not in node:
        node = {"type": "object", "properties": {}}
    node.setdefault("type", "object")
    node.setdefault("properties", {})
    return node


def _normalise(node: Any) -> Any:
    if isinstance(node, list):
        return [_normalise(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _normalise(v) for k, v in node.items() if k not in _OPENAPI_ONLY}
    if "example" in node and "examples" not in out:
        out["examples"] = [node["example"]]
    if out.pop("nullable", False) is True:
        kind = out.get("type")
        if isinstance(kind, str):
            out["type"] = [kind, "null"]
        elif "anyOf" in out or "oneOf" in out:
            key = "anyOf" if "anyOf" in out else "oneOf"
            out[key] = [*out[key], {"type": "null"}]
    return out


def json_schema_is_strict_capable(schema: dict[str, Any]) -> bool:
    """Whether OpenAI strict mode can express this schema (no free-form values, no keywords
    strict mode rejects)."""
    if _free_form(schema):
        return False
    return not _has_keyword(schema, ("$ref", "patternProperties", "if", "not", "dependentSchemas"))


def _has_keyword(node: Any, keywords: tuple[str, ...]) -> bool:
    if isinstance(node, list):
        return any(_has_keyword(n, keywords) for n in node)
    if not isinstance(node, dict):
        return False
    if any(k in node for k in keywords):
        return True
    return any(_has_keyword(v, keywords) for v in node.values())


def strict_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI strict shape of an imported schema (see ``strict_schema``)."""
    node = copy.deepcopy(schema)
    _walk(node, strict=True)
    return node


def plain_json_schema(schema: dict[str, Any]) -> dict[str, Any]:
    node = copy.deepcopy(schema)
    node.pop("title", None)
    return node
