"""Seed 003's tool-call envelope, for the text fallback (``chat_app.fallback``)::

    {"type": "tool_call", "tool": "browser", "action": "open",
     "params": {"url": "https://…", "timeout": 10}, "id": "call_123"}

    {"type": "tool_use", "tools": [{"tool": "shell", "command": "docker ps", "id": "call_1"},
                                   {"tool": "http", "method": "POST", "url": "…", "id": "call_2"}]}

A *family* (``browser``, ``shell``, ``file``, ``docker``, ``http``) and an *action* name one of
our tools; parameters come from ``params`` or stand next to ``tool`` (the second form). The
name is resolved against the tools the round offers: ``<family>_<action>`` (``browser_open``,
``file_read``, ``docker_logs``), then the family's own names (``shell`` → ``shell_exec``,
``http`` → ``http_request`` with the action as its method, ``docker`` + ``run`` →
``container_run``), then the words as given (a tool called by its own name). Nothing here
decides whether a call may run: each becomes an ordinary call for binding.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

Parsed = tuple[str, dict[str, Any] | None, str | None]  # (tool name, arguments, error)

_ENVELOPE_KEYS = frozenset({"type", "tool", "action", "params", "id"})
_HTTP_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"})
# The family's own names for an action (after "<family>_<action>" is tried).
_FAMILY = {
    ("shell", None): "shell_exec",
    ("shell", "exec"): "shell_exec",
    ("shell", "bash"): "shell_exec",
    ("shell", "run"): "shell_exec",
    ("http", None): "http_request",
    ("docker", "list"): "docker_list_containers",
    ("docker", "ps"): "docker_list_containers",
    ("docker", "create"): "container_create",
    ("docker", "run"): "container_run",
    ("docker", "remove"): "container_remove",
    ("docker", "rm"): "container_remove",
    ("browser", "navigate"): "browser_open",
    ("browser", "goto"): "browser_open",
}


def _resolve(family: str, action: str | None, offered: Collection[str]) -> str:
    family = family.strip()
    key = family.lower()
    verb = action.strip().lower().replace("-", "_") if action else None
    candidates: list[str] = []
    if verb:
        candidates.append(f"{key}_{verb}")
        if key == "docker":
            candidates.append(f"container_{verb}")
    if key == "http":
        candidates.append("http_request")
    named = _FAMILY.get((key, verb))
    if named:
        candidates.append(named)
    candidates.append(family)
    for name in candidates:
        if name in offered:
            return name
    # Nothing offered matches: binding refuses it and lists the tools there are.
    return candidates[0] if verb else (named or family)


def _one(item: dict[str, Any], offered: Collection[str]) -> Parsed:
    family, action = item.get("tool"), item.get("action")
    if not isinstance(family, str) or not family.strip():
        return ("", None, "the tool_call does not name a tool")
    if action is not None and not isinstance(action, str):
        return (family, None, "action must be a string")
    params = item.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return (family, None, f"params must be a JSON object, got {type(params).__name__}")
    arguments = {**{k: v for k, v in item.items() if k not in _ENVELOPE_KEYS}, **params}
    name = _resolve(family, action, offered)
    if name == "http_request":
        method = action.upper() if action and action.upper() in _HTTP_METHODS else None
        if method and "method" not in arguments:
            arguments["method"] = method
        if isinstance(arguments.get("body"), dict | list) and "json" not in arguments:
            arguments["json"] = arguments.pop("body")  # a JSON body, as the seed writes it
    return (name, arguments, None)


def envelope_calls(value: object, offered: Collection[str]) -> list[Parsed] | None:
    """The calls of an envelope, or None when ``value`` is not one (an ordinary object)."""
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind == "tool_use" and isinstance(value.get("tools"), list):
        items = value["tools"]
        if not items:
            return [("", None, "the tool_use envelope lists no tools")]
        return [
            _one(item, offered)
            if isinstance(item, dict)
            else ("", None, "each entry of tools must be a JSON object")
            for item in items
        ]
    if kind == "tool_call" and "tool" in value:
        return [_one(value, offered)]
    # Without "type": only the seed's tool/action/params shape, so that a JSON example with
    # a "tool" key and other data is not mistaken for a call.
    seed_shape = "tool" in value and ("action" in value or "params" in value)
    if kind is None and seed_shape and set(value) <= _ENVELOPE_KEYS:
        return [_one(value, offered)]
    return None
