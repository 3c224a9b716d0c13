"""The mcp_call activity: one tools/call on this worker's live session with the server."""

from __future__ import annotations

from typing import Any

from tools_app.errors import ToolError
from tools_app.executors.mcp.results import convert_result
from tools_app.executors.mcp.settings import McpSettings
from tools_app.executors.mcp.tools import McpTool
from tools_app.models import ToolSource
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("mcp_call")
def mcp_call(args: McpTool, ctx: ActivityContext[McpSettings]) -> dict[str, Any]:
    from tools_app.executors.mcp.services import mcp_runtime, server_spec

    tool = type(args)
    source = tool.source_row  # the row this function was registered from (same revision)
    if source is None:
        source = ToolSource.objects.filter(name=tool.source_name, kind="mcp").first()
    if source is None:
        raise ToolError(f"the MCP server {tool.source_name!r} is no longer registered")
    settings = ctx.settings
    spec = server_spec(source, workspace_id=ctx.workspace_id, settings=settings)

    def progress(value: float, total: float | None, message: str | None) -> None:
        of = f"/{total:g}" if total is not None else ""
        ctx.emit_output(f"progress {value:g}{of}{': ' + message if message else ''}\n")

    rt = mcp_runtime()
    result, sandbox_id = rt.run(
        lambda: rt.call_tool(spec, tool.remote_name, args.arguments, progress),
        timeout=ctx.timeout,
        cancel=ctx.cancel,
    )
    ctx.sandbox_id = sandbox_id
    out, is_error = convert_result(result, ctx, limit=settings.max_result_chars)
    if is_error:
        raise ToolError(out.get("text") or "the MCP tool reported an error", data=out)
    return out
