"""The words of the built-in tools that people read, as a message catalog source.

Tool descriptions live in the tools' code (docstrings, ``Field(description=...)``), where
``makemessages`` cannot see them. ``catalog_source()`` lists them, with the Tools Manager's
group labels and descriptions and the labels its forms derive from field names, as
``gettext_noop`` calls; ``manage.py tool_catalog`` writes that to ``tools_app/tool_strings.py``
for ``makemessages`` to collect, and ``--check`` (a test runs it) fails when a tool's words
changed and the file was not written again. Imported tools (MCP, OpenAPI) are left out: their
servers describe them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from tools_app.imported import ImportedTool
from tools_app.manager.forms import UNIT_SUFFIXES, field_label
from tools_app.registry import GROUPS
from tools_app.schema import plain_schema

# Inside an app: makemessages leaves the locale folders themselves out.
CATALOG_PATH = Path(settings.BASE_DIR) / "tools_app" / "tool_strings.py"

_HEADER = '''"""Written by `manage.py tool_catalog` (tools_app/catalog.py): do not edit by hand.

The words of the built-in tools people read (descriptions of tools and arguments, the Tools
Manager's group labels and settings), for makemessages. docs/TRANSLATING.md says more.
"""

from django.utils.translation import gettext_noop as _

STRINGS = [
'''


def _descriptions(node: Any, found: list[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _descriptions(item, found)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                found.append(value)
            else:
                _descriptions(value, found)


def _labels(schema: dict[str, Any], found: list[str]) -> None:
    for name in schema.get("properties", {}):
        found.append(field_label(name))


def catalog_strings() -> list[tuple[str, str]]:
    """(text, where it comes from), each text once, in a stable order."""
    seen: dict[str, str] = {}

    def add(texts: list[str], where: str) -> None:
        for text in texts:
            text = text.strip()
            if text and text not in seen:
                seen[text] = where

    for group in sorted(GROUPS.values(), key=lambda g: (g.order, g.name)):
        tools = [t for t in group.tools if not issubclass(t, ImportedTool)]
        if not tools and group.settings_model.model_fields == {}:
            continue
        if tools and all(issubclass(t, ImportedTool) for t in group.tools):
            continue
        add([group.label, group.description], f"group {group.name}")
        settings_schema = plain_schema(group.settings_model)
        found: list[str] = []
        _descriptions(settings_schema, found)
        _labels(settings_schema, found)
        add(found, f"group {group.name}: settings")
        for tool in sorted(tools, key=lambda t: t.tool_name):
            found = [tool.description()]
            # The plain schema: the strict one says the same with defaults folded in, which
            # tools_app.i18n translates piece by piece.
            schema = plain_schema(tool)
            _descriptions(schema, found)
            _labels(schema, found)
            add(found, f"tool {tool.tool_name}")
    add([unit for unit in UNIT_SUFFIXES.values() if unit != "%"], "units")
    return list(seen.items())


def catalog_source() -> str:
    lines = [_HEADER]
    for text, where in catalog_strings():
        lines.append(f"    # {where}\n    _({text!r}),\n")
    lines.append("]\n")
    return "".join(lines)
