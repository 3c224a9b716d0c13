"""Imported tools: tool groups and functions made at run time from ``ToolSource`` records.

Our own tools are Pydantic classes written in code. An MCP server's or an OpenAPI document's
functions come from the database instead, described by JSON Schemas. Each becomes a subclass
of ``ImportedTool`` — a ``BaseTool`` whose arguments are checked with ``jsonschema`` against
the imported schema — registered in the same registry, so binding, policy, approval, limits,
cards, the Tools Manager and the audit log treat them exactly like ours.

Every process (web, each worker) keeps its registry in step with the database on the tool
configuration's token (``tools_app.selectors``): a write to a source moves the token on like
any other configuration write, and the first read of the configuration that finds a new token
compares the ``(id, revision)`` pairs of all sources with what this process registered. A
source whose revision changed is registered again; a source that is gone is unregistered.

Only pinned definitions are registered (``tools_app.services.pins``): a function its server
added or dropped since an admin accepted it is not registered but *held* (binding refuses it
by name, ``held_reason``); a changed one is registered as accepted, with ``review_hold`` set
unless its source keeps serving the pinned version.
"""

from __future__ import annotations

import logging
import re
import threading
import types
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import jsonschema
from pydantic import ConfigDict, model_validator

from tools_app.registry import GROUPS, TOOLS, BaseTool, ToolGroup, register_group, unregister_tool
from tools_app.schema import (
    json_schema_is_strict_capable,
    normalise_json_schema,
    plain_json_schema,
    strict_json_schema,
)

logger = logging.getLogger(__name__)

MAX_NAME = 64
_NAME_OK = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ImportedTool(BaseTool, abstract=True):
    """A function described by an imported JSON Schema (extra keys are its arguments)."""

    model_config = ConfigDict(extra="allow")

    input_schema: ClassVar[dict[str, Any]] = {}
    tool_doc: ClassVar[str] = ""
    remote_name: ClassVar[str] = ""
    source_name: ClassVar[str] = ""
    source_kind: ClassVar[str] = ""
    spec: ClassVar[dict[str, Any]] = {}
    # The ToolSource row as registered (this revision): activities read its connection from
    # here instead of querying it on every call.
    source_row: ClassVar[Any] = None
    # Why binding refuses this function for now ("" when it may run): its server changed its
    # definition and an admin has not reviewed it (tools_app.services.pins).
    review_hold: ClassVar[str] = ""
    _compiled: ClassVar[Any] = None

    @model_validator(mode="before")
    @classmethod
    def _check_schema(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValueError("arguments must be a JSON object")
        schema = cls.input_schema
        required = set(schema.get("required") or [])
        properties = schema.get("properties") or {}
        # Strict schemas make optional arguments nullable; null then means "not given".
        data = {
            k: v
            for k, v in data.items()
            if not (v is None and k not in required and not _allows_null(properties.get(k)))
        }
        validator = cls._validator()
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        if errors:
            raise ValueError("; ".join(_describe(e) for e in errors[:5]))
        return data

    @classmethod
    def _validator(cls) -> jsonschema.Draft202012Validator:
        # Built once per function (building one costs more than a validation).
        cached = cls.__dict__.get("_compiled")
        if cached is None:
            cached = jsonschema.Draft202012Validator(cls.input_schema)
            cls._compiled = cached
        return cached

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    @classmethod
    def description(cls) -> str:
        return " ".join(cls.tool_doc.split())

    @classmethod
    def openai_schema(cls, *, strict: bool = True) -> dict[str, Any]:
        strict = strict and json_schema_is_strict_capable(cls.input_schema)
        function: dict[str, Any] = {
            "name": cls.tool_name,
            "description": cls.description(),
            "parameters": strict_json_schema(cls.input_schema)
            if strict
            else plain_json_schema(cls.input_schema),
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}

    @classmethod
    def anthropic_schema(cls) -> dict[str, Any]:
        return {
            "name": cls.tool_name,
            "description": cls.description(),
            "input_schema": plain_json_schema(cls.input_schema),
        }

    @classmethod
    def example(cls) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, prop in (cls.input_schema.get("properties") or {}).items():
            if not isinstance(prop, dict):
                continue
            if prop.get("examples"):
                out[key] = prop["examples"][0]
            elif "default" in prop:
                out[key] = prop["default"]
        return out


def _allows_null(prop: Any) -> bool:
    if not isinstance(prop, dict):
        return False
    kind = prop.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_allows_null(p) for p in prop.get("anyOf", []) + prop.get("oneOf", []))


def _describe(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        return str(error.message).replace(" is a required property", " is required")
    if error.validator == "additionalProperties":
        return str(error.message)
    return f"'{where}': {error.message}" if where else str(error.message)


# --- names -------------------------------------------------------------------------------
def safe_name(text: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", text).strip("_") or "tool"
    return name[:MAX_NAME]


def assign_names(
    source_name: str,
    remote_names: list[str],
    *,
    previous: dict[str, str] | None = None,
    tools: Mapping[str, type[BaseTool]] | None = None,
) -> dict[str, str]:
    """Our tool name for each remote name: the remote name itself when it is free and valid,
    else prefixed with the source's name (``time_get_current_time``). Names assigned before
    are kept, so a refresh does not rename a function an admin configured. ``tools``: the
    registry to keep clear of (this process's by default)."""
    previous = previous or {}
    group = f"{source_name}".replace("-", "_")
    taken = {
        name
        for name, tool in (TOOLS if tools is None else tools).items()
        if not (isinstance(tool, type) and issubclass(tool, ImportedTool))
        or tool.source_name != source_name
    }
    out: dict[str, str] = {}
    for remote in remote_names:
        name = previous.get(remote)
        if name is None or name in taken or name in out.values():
            name = remote if _NAME_OK.match(remote) else safe_name(remote)
            if name in taken or name in out.values():
                name = safe_name(f"{group}_{remote}")
            suffix = 2
            base = name
            while name in taken or name in out.values():
                name = f"{base[: MAX_NAME - 4]}_{suffix}"
                suffix += 1
        out[remote] = name
    return out


# --- registration ------------------------------------------------------------------------
# kind → (base class, group factory). Executor packages (mcp, openapi) register themselves.
Factory = Callable[[Any], ToolGroup]
KINDS: dict[str, tuple[type[ImportedTool], Factory, str]] = {}


def register_kind(kind: str, *, base: type[ImportedTool], group: Factory, activity: str) -> None:
    KINDS[kind] = (base, group, activity)


# --- functions held for review -------------------------------------------------------------
# Tool name → why binding refuses it: functions a server added or dropped that an admin has
# not reviewed. They are not registered (offered nowhere); binding asks here before it says
# "unknown tool". Kept per group, replaced whenever the group is registered again.
_held: dict[str, dict[str, str]] = {}


def held_reason(name: str) -> str | None:
    for names in list(_held.values()):
        if name in names:
            return names[name]
    return None


def hold_new(name: str) -> str:
    return f"{name} is waiting for an admin's review of its new definition"


def hold_changed(name: str) -> str:
    return (
        f"{name} changed on its server and is waiting for an admin's review of its new definition"
    )


def hold_gone(name: str, source: str) -> str:
    return f"{name} is no longer offered by the server ({source}); an admin will review it"


def _holds(source: Any) -> tuple[dict[str, str], set[str]]:
    """(held names → reason, names of changed functions that are refused)."""
    held: dict[str, str] = {}
    refused: set[str] = set()
    for entry in getattr(source, "review", None) or []:
        name, status = entry.get("name") or entry.get("remote") or "", entry.get("status")
        if status == "new":
            held[name] = hold_new(name)
        elif status == "gone":
            held[name] = hold_gone(name, str(source))
        elif status == "changed" and not getattr(source, "serve_pinned", False):
            refused.add(name)
    return held, refused


def _make_tool(
    source: Any, group: ToolGroup, spec: dict[str, Any], *, hold: str = ""
) -> type[ImportedTool]:
    base, _, activity_name = KINDS[source.kind]
    schema = normalise_json_schema(spec.get("input_schema") or {})
    attrs = {
        "__module__": __name__,
        "input_schema": schema,
        "tool_doc": spec.get("description") or spec.get("remote") or spec["name"],
        "remote_name": spec.get("remote") or spec["name"],
        "source_name": source.name,
        "source_kind": source.kind,
        "spec": spec,
        "source_row": source,
        "review_hold": hold,
    }
    kwds = {"name": spec["name"], "group": group.name, "activity": activity_name}
    cls = types.new_class(
        f"imported:{source.name}:{spec['name']}", (base,), kwds, lambda ns: ns.update(attrs)
    )
    return cls


def register_source(source: Any) -> ToolGroup | None:
    """(Re-)register a source's group and functions in this process."""
    if source.kind not in KINDS:
        logger.warning("tool source %s has unknown kind %r", source, source.kind)
        return None
    unregister_source(source.group_name)
    group = KINDS[source.kind][1](source)
    register_group(group)
    held, refused = _holds(source)
    _held[source.group_name] = held
    for spec in source.functions or []:
        if spec.get("name") in held:  # gone from the server: offered nowhere
            continue
        if spec.get("name") in TOOLS:  # a static tool took the name since: never shadow it
            logger.warning("imported function %s clashes with an existing tool", spec["name"])
            continue
        try:
            hold = hold_changed(spec["name"]) if spec.get("name") in refused else ""
            _make_tool(source, group, spec, hold=hold)
        except Exception:
            logger.exception("cannot register imported function %s", spec.get("name"))
    return group


def unregister_source(group_name: str) -> None:
    _held.pop(group_name, None)
    group = GROUPS.get(group_name)
    if group is None:
        return
    for tool in list(group.tools):
        unregister_tool(tool.tool_name)
    GROUPS.pop(group_name, None)


_lock = threading.Lock()
_registered: dict[int, tuple[int, str]] = {}  # source id → (revision, group name)
_synced_token: str | None = None  # the configuration token the registry was last synced under


def imported_refresh(token: str | None) -> None:
    """Bring this process's imported tools in step with the ToolSource table if the
    configuration token moved since they last were (``selectors.config_snapshot`` calls this
    with the token it just read; ``None``, no token row: every time). Nothing else calls it:
    every write to a source moves the token (``ToolSource`` is configuration-tracked)."""
    global _synced_token
    if token is not None and token == _synced_token:
        return
    with _lock:
        if token is not None and token == _synced_token:
            return
        _sync()
        _synced_token = token


def _sync() -> None:
    """One small query (the sources' ids and revisions); more only for what changed."""
    from tools_app.models import ToolSource

    stamp = dict(ToolSource.objects.order_by().values_list("id", "revision"))
    if stamp == {k: v[0] for k, v in _registered.items()}:
        return
    for source_id in set(_registered) - set(stamp):
        unregister_source(_registered.pop(source_id)[1])
    changed = [i for i, rev in stamp.items() if _registered.get(i, (None,))[0] != rev]
    for source in ToolSource.objects.filter(pk__in=changed):
        old = _registered.get(source.pk)
        if old is not None and old[1] != source.group_name:
            unregister_source(old[1])
        register_source(source)
        _registered[source.pk] = (source.revision, source.group_name)


def imported_reset() -> None:
    """Forget every imported group (tests); the next configuration read registers them again."""
    global _synced_token
    with _lock:
        for _, group_name in _registered.values():
            unregister_source(group_name)
        _registered.clear()
        _synced_token = None
