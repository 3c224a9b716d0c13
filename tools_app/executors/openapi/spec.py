"""Reading an OpenAPI 3.0/3.1 document: validate it, list its operations as functions.

Validation is ``openapi-spec-validator`` (the python-openapi project's validator, which knows
3.0 and 3.1); this module only walks the validated document. Local ``$ref``s
(``#/components/...``) are inlined, within a size budget; a recursive schema stops at the
second visit as a free-form object. Parameters (path, query, header) and a JSON request body
become one JSON Schema object: parameters by name, the body under ``body``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import yaml

METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
JSON_TYPES = ("application/json",)
# Entries inlined references may add: per path item, and for the whole document.
MAX_ITEM_EXPANSION = 10_000
MAX_DOCUMENT_EXPANSION = 200_000


class SpecError(ValueError):
    """The document is not a usable OpenAPI 3 document (words for the admin)."""


@dataclass
class Operation:
    name: str
    method: str
    path: str
    summary: str
    description: str
    input_schema: dict[str, Any]
    params: list[dict[str, Any]] = field(default_factory=list)  # name, in, required, key
    body: bool = False
    body_required: bool = False
    responses: str = ""
    skipped: str = ""  # why the operation cannot be imported
    # The scopes each security scheme needs for it (its own ``security``, else the
    # document's); what an OAuth connection asks for. Not part of the pinned function.
    scopes: dict[str, list[str]] = field(default_factory=dict)

    def function(self) -> dict[str, Any]:
        """The record stored in ToolSource.functions."""
        text = self.summary or f"{self.method.upper()} {self.path}"
        if self.description and self.description != self.summary:
            text = f"{text}. {self.description}"
        if self.responses:
            text = f"{text} Returns: {self.responses}"
        return {
            "name": self.name,
            "remote": self.name,
            "description": f"{text} ({self.method.upper()} {self.path})"[:1000],
            "input_schema": self.input_schema,
            "method": self.method,
            "path": self.path,
            "params": self.params,
            "body": self.body,
        }


def load_document(text: str | bytes) -> dict[str, Any]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"the document is neither JSON nor YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise SpecError("the document is not a JSON/YAML object")
    return doc


def validate_document(doc: dict[str, Any]) -> str:
    """Raise SpecError unless ``doc`` is a valid OpenAPI 3.x document; return its version."""
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    version = str(doc.get("openapi") or "")
    if not version.startswith("3."):
        swagger = doc.get("swagger")
        raise SpecError(
            f"only OpenAPI 3.0/3.1 documents can be imported (this one says "
            f"{'swagger ' + str(swagger) if swagger else 'openapi ' + (version or '?')})"
        )
    try:
        validate(doc)
    except OpenAPIValidationError as exc:
        where = "/".join(str(p) for p in getattr(exc, "path", []) or [])
        at = f" at {where}" if where else ""
        raise SpecError(f"invalid OpenAPI document{at}: {exc.message}") from None
    except Exception as exc:  # the validator's other errors (unresolvable refs, ...)
        raise SpecError(f"invalid OpenAPI document: {exc}") from None
    return version


def base_url(doc: dict[str, Any], document_url: str = "") -> str:
    servers = doc.get("servers") or []
    url = ""
    if servers and isinstance(servers[0], dict):
        url = str(servers[0].get("url") or "")
        for name, var in (servers[0].get("variables") or {}).items():
            url = url.replace("{" + name + "}", str((var or {}).get("default", "")))
    if document_url and not url.startswith(("http://", "https://")):
        url = urljoin(document_url, url or "/")
    return url.rstrip("/")


class _Resolver:
    """Inlines local ``$ref``s, within budgets of entries (dict items and list elements) the
    expanded references may add: a reference used twice on each of 25 levels would
    otherwise be copied 2**25 times (a 2.6 KB document took 8.7 s and became a 17 MB
    schema, in the web request). Past a budget a reference is left as a free-form object
    that says so; the work is linear in the budgets, whatever the document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.document_left = MAX_DOCUMENT_EXPANSION
        self.item_left = MAX_ITEM_EXPANSION

    def pointer(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise SpecError(f"only local references can be imported, not {ref!r}")
        node: Any = self.doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                raise SpecError(f"reference {ref!r} points at nothing")
            node = node[part]
        return node

    def inline_item(self, node: Any) -> Any:
        """``node`` (one path item) with its references inlined, under its own budget."""
        self.item_left = MAX_ITEM_EXPANSION
        return self.inline(node)

    def inline(self, node: Any, seen: tuple[str, ...] = ()) -> Any:
        if isinstance(node, list | dict) and seen:  # a copy a reference adds
            self.item_left -= len(node)
            self.document_left -= len(node)
        if isinstance(node, list):
            return [self.inline(n, seen) for n in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node and isinstance(node["$ref"], str):
            ref = node["$ref"]
            if ref in seen:
                return {"type": "object", "description": "(recursive structure)"}
            if self.item_left <= 0 or self.document_left <= 0:
                name = ref.rsplit("/", 1)[-1][:100]
                return {"type": "object", "description": f"{name} (not expanded: too large)"}
            target = self.pointer(ref)
            if isinstance(target, dict):
                target = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            return self.inline(target, (*seen, ref))
        return {k: self.inline(v, seen) for k, v in node.items()}


def _operation_name(op: dict[str, Any], method: str, path: str) -> str:
    raw = str(op.get("operationId") or "")
    if not raw:
        raw = f"{method}_{path}"
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", raw).strip("_")
    return name[:64] or f"{method}_operation"


def _summarise_responses(responses: dict[str, Any]) -> str:
    parts = []
    for code, response in list(responses.items())[:4]:
        if not isinstance(response, dict):
            continue
        text = str(response.get("description") or "").strip().rstrip(".")
        kinds = ", ".join(list((response.get("content") or {}).keys())[:2])
        parts.append(f"{code}{' ' + kinds if kinds else ''}{': ' + text if text else ''}")
    return "; ".join(parts)


def operations(doc: dict[str, Any]) -> list[Operation]:
    """Every operation, in document order; those we cannot call carry ``skipped``."""
    resolver = _Resolver(doc)
    out: list[Operation] = []
    names: set[str] = set()
    default_security = doc.get("security")
    for path, item in (doc.get("paths") or {}).items():
        if not isinstance(item, dict):
            continue
        item = resolver.inline_item(item)
        shared = item.get("parameters") or []
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            name = _operation_name(op, method, path)
            base, n = name, 2
            while name in names:
                name, n = f"{base[:60]}_{n}", n + 1
            names.add(name)
            operation = _operation(name, method, path, op, shared)
            operation.scopes = _scopes(op.get("security", default_security))
            out.append(operation)
    return out


def _scopes(security: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for requirement in security if isinstance(security, list) else []:
        if isinstance(requirement, dict):
            for scheme, scopes in requirement.items():
                listed = [str(x) for x in scopes] if isinstance(scopes, list) else []
                out.setdefault(str(scheme), [])
                out[str(scheme)] += [x for x in listed if x not in out[str(scheme)]]
    return out


def oauth2_code_flow(doc: dict[str, Any], document_url: str = "") -> dict[str, Any] | None:
    """The document's first ``oauth2`` security scheme with an ``authorizationCode`` flow:
    its endpoints (relative ones resolved against the document's server) and scopes; the
    vendor extension ``x-revocationUrl`` names an RFC 7009 endpoint where there is one.
    None when the document declares no such flow."""
    from urllib.parse import urljoin

    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    base = base_url(doc, document_url) or document_url
    for name, scheme in schemes.items() if isinstance(schemes, dict) else []:
        if not isinstance(scheme, dict) or scheme.get("type") != "oauth2":
            continue
        flow = (scheme.get("flows") or {}).get("authorizationCode")
        if not isinstance(flow, dict):
            continue
        urls = {
            key: urljoin(base + "/", str(flow.get(field) or "")) if flow.get(field) else ""
            for key, field in (
                ("authorization_url", "authorizationUrl"),
                ("token_url", "tokenUrl"),
                ("refresh_url", "refreshUrl"),
                ("revocation_url", "x-revocationUrl"),
            )
        }
        if not all(
            u.startswith(("http://", "https://"))
            for u in (urls["authorization_url"], urls["token_url"])
        ):
            continue
        scopes = flow.get("scopes") or {}
        return {
            "scheme": str(name),
            **urls,
            "scopes": [str(k) for k in scopes] if isinstance(scopes, dict) else [],
        }
    return None


def _operation(
    name: str, method: str, path: str, op: dict[str, Any], shared: list[Any]
) -> Operation:
    properties: dict[str, Any] = {}
    required: list[str] = []
    params: list[dict[str, Any]] = []
    skipped = ""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for param in [*shared, *(op.get("parameters") or [])]:
        if isinstance(param, dict) and "name" in param and "in" in param:
            merged[(str(param["in"]), str(param["name"]))] = param
    for (where, pname), param in merged.items():
        if where == "cookie":
            if param.get("required"):
                skipped = f"required cookie parameter {pname!r} is not supported"
            continue
        key = pname if pname not in properties else f"{where}_{pname}"
        key = re.sub(r"[^a-zA-Z0-9_.-]", "_", key)[:64]
        schema = dict(param.get("schema") or {"type": "string"})
        if param.get("description") and "description" not in schema:
            schema["description"] = str(param["description"])
        schema.setdefault("description", f"{where} parameter")
        properties[key] = schema
        is_required = bool(param.get("required")) or where == "path"
        if is_required:
            required.append(key)
        params.append({"name": pname, "in": where, "required": is_required, "key": key})
    body = False
    body_required = False
    request_body = op.get("requestBody")
    if isinstance(request_body, dict):
        content = request_body.get("content") or {}
        json_type = next((t for t in content if t.split(";")[0].strip() in JSON_TYPES), None)
        if json_type is None:
            kinds = ", ".join(content) or "none"
            if request_body.get("required"):
                skipped = skipped or f"request body type {kinds} is not supported (JSON only)"
        else:
            schema = dict((content[json_type] or {}).get("schema") or {})
            schema.setdefault("description", str(request_body.get("description") or "JSON body"))
            key = "body" if "body" not in properties else "request_body"
            properties[key] = schema
            body = True
            body_required = bool(request_body.get("required"))
            if body_required:
                required.append(key)
            params.append({"name": key, "in": "body", "required": body_required, "key": key})
    input_schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        input_schema["required"] = required
    input_schema["additionalProperties"] = False
    return Operation(
        name=name,
        method=method,
        path=path,
        summary=str(op.get("summary") or "").strip(),
        description=" ".join(str(op.get("description") or "").split())[:500],
        input_schema=input_schema,
        params=params,
        body=body,
        body_required=body_required,
        responses=_summarise_responses(op.get("responses") or {}),
        skipped=skipped,
    )
