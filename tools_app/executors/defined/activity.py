"""defined_call: a bound defined tool runs its bound tool's activity, with that tool's
validated arguments and its group's settings (binding checked its policy already)."""

from __future__ import annotations

import dataclasses
from typing import Any

from tools_app import selectors
from tools_app.errors import ToolError
from tools_app.executors.defined.tools import DefinedTool
from tools_app.registry import activity, activity_name, get_tool, resolve_activity
from tools_app.runtime import ActivityContext
from tools_app.services.narrowing import settings_narrowed


@activity("defined_call")
def defined_call(args: DefinedTool, ctx: ActivityContext[Any]) -> dict[str, Any]:
    target = args.bound_tool()
    if target is None:
        raise ToolError(f"{args.tool_name} is bound to a tool that no longer exists")
    run = resolve_activity(target)
    if run is None:
        raise ToolError(f"{target.tool_name} has no activity to run")
    owner = get_tool(activity_name(target)) or target
    settings = settings_narrowed(
        selectors.config_snapshot().settings(owner.tool_group),
        group=owner.tool_group,
        conversation_id=ctx.conversation_id,
    )
    return run(args.bound_call(), dataclasses.replace(ctx, settings=settings))
