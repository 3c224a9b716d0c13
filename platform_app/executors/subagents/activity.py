"""subagent_spawn: limits checked again here (binding may be minutes old with approval)."""

from __future__ import annotations

from typing import Any

from platform_app import subagents
from platform_app.executors.schedules.tools import check_model
from platform_app.executors.subagents.settings import SubagentsSettings
from platform_app.executors.subagents.tools import SubagentSpawn
from platform_app.schedules import conversation_owned
from tools_app.errors import PolicyDenied
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("subagent_spawn")
def subagent_spawn(args: SubagentSpawn, ctx: ActivityContext[SubagentsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    if ctx.user_id is None:
        raise PolicyDenied("subagents belong to a user; this call has none")
    check_model(args.model, settings.allowed_models, conversation_id=ctx.conversation_id)
    target: int | None = None
    if isinstance(args.inject_into, int):
        conversation_owned(conversation_id=args.inject_into, user_id=ctx.user_id)
        target = args.inject_into
    elif args.inject_into == "parent":
        target = ctx.conversation_id
    subagent = subagents.subagent_spawn(
        user_id=ctx.user_id,
        spec=subagents.Spawn(
            name=args.name,
            message=args.message[: settings.max_message_chars],
            model=args.model or "",
            inject_into=target,
        ),
        parent_conversation_id=ctx.conversation_id,
        parent_call_id=ctx.call_id or None,
        max_depth=settings.max_depth,
        max_concurrent=settings.max_concurrent_per_user,
        max_rounds=settings.max_rounds,
        scope=ctx.scope,
    )
    out = subagents.subagent_describe(subagent)
    ctx.emit_output(f"started {args.name!r} in conversation {subagent.conversation_id}\n")
    return {"status": "started", **{k: v for k, v in out.items() if k != "status"}}
