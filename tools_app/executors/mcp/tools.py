from __future__ import annotations

from tools_app.executors.mcp.settings import mcp_group
from tools_app.imported import ImportedTool, register_kind


class McpTool(ImportedTool, abstract=True):
    """A tool of a registered MCP server (subclassed per tool at run time)."""


register_kind("mcp", base=McpTool, group=mcp_group, activity="mcp_call")
