"""The built-in tools' schemas as one checked-in JSON file (seed 000 #22), so a change to a
tool's schema shows in review as a diff of ``docs/tool-schemas.json``.

``manage.py tools schemas --write docs/tool-schemas.json`` writes it; ``--check`` (a test
and CI run it) fails when a tool's schema changed and the file was not written again.
Imported tools (MCP, OpenAPI) and tools defined at run time are left out: they are data,
not code, and differ per deployment. Unlike ``export_tool_schemas`` and
``/api/tools/schemas.json`` it does not depend on what is enabled here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from tools_app.imported import ImportedTool
from tools_app.registry import GROUPS, BaseTool

SCHEMAS_PATH = Path(settings.BASE_DIR) / "docs" / "tool-schemas.json"
_APPS = ("tools_app", "chat_app", "platform_app")
COMMAND = "manage.py tools schemas --write docs/tool-schemas.json"


def built_in(tool: type[BaseTool]) -> bool:
    """A tool written in this code base (not imported, not defined at run time, not a test's
    throwaway tool)."""
    return (
        tool.__module__.split(".")[0] in _APPS
        and not issubclass(tool, ImportedTool)
        and not getattr(tool, "tool_defined", False)
    )


def schemas_document() -> dict[str, Any]:
    tools: list[dict[str, Any]] = []
    for group in sorted(GROUPS.values(), key=lambda g: (g.order, g.name)):
        for tool in sorted(group.tools, key=lambda t: t.tool_name):
            if not built_in(tool):
                continue
            # What an OpenAI-compatible model is sent (strict where the schema allows it).
            tools.append({"group": group.name, **tool.openai_schema(strict=True)})
    return {"written_by": COMMAND, "count": len(tools), "tools": tools}


def schemas_text() -> str:
    return json.dumps(schemas_document(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def schemas_stale(path: Path = SCHEMAS_PATH) -> bool:
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    return current != schemas_text()
