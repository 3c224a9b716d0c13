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
    from tools_app.connections.services import (
        ConnectionNeeded,
        connection_mark_broken,
        credential_for_call,
        scrub,
    )
    from tools_app.executors.mcp.runtime import CredentialRejected
    from tools_app.executors.mcp.services import mcp_runtime, server_spec

    tool = type(args)
    source = tool.source_row  # the row this function was registered from (same revision)
    if source is None:
        source = ToolSource.objects.filter(name=tool.source_name, kind="mcp").first()
    if source is None:
        raise ToolError(f"the MCP server {tool.source_name!r} is no longer registered")
    settings = ctx.settings
    # A per-person server: the call's person's own connection (renewed first if expired),
    # or ConnectionNeeded. Never anyone else's, never the shared secret.
    credential = credential_for_call(source, user_id=ctx.user_id, tool=tool.tool_name)
    secrets = credential.secret_values if credential is not None else ()
    spec = server_spec(
        source, workspace_id=ctx.workspace_id, settings=settings, credential=credential
    )

    def progress(value: float, total: float | None, message: str | None) -> None:
        of = f"/{total:g}" if total is not None else ""
        text = f"progress {value:g}{of}{': ' + message if message else ''}\n"
        ctx.emit_output(scrub(text, secrets))

    rt = mcp_runtime()
    try:
        result, sandbox_id = rt.run(
            lambda: rt.call_tool(spec, tool.remote_name, args.arguments, progress),
            timeout=ctx.timeout,
            cancel=ctx.cancel,
        )
    except CredentialRejected:
        assert credential is not None
        connection_mark_broken(credential.connection_id)
        raise ConnectionNeeded(
            source,
            tool.tool_name,
            reason="the server refused the token and it could not be renewed",
        ) from None
    except ToolError as exc:
        if secrets:  # a server's error text may quote the request; its type stays (Stop…)
            exc.message, exc.data = scrub(exc.message, secrets), scrub(exc.data, secrets)
            exc.args = (exc.message,)
        raise
    ctx.sandbox_id = sandbox_id
    out, is_error = convert_result(result, ctx, limit=settings.max_result_chars)
    out = scrub(out, secrets)
    if credential is not None:  # which account served the call (the audit record keeps it)
        out["connection"] = credential.label
    if is_error:
        raise ToolError(out.get("text") or "the MCP tool reported an error", data=out)
    return out
