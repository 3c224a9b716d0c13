"""Memory activities: thin wrappers over ``platform_app.memory.services``, always for
the calling user (``ctx.user_id``), never for a user named in the arguments."""

from __future__ import annotations

from typing import Any

from platform_app.executors.memory.settings import MemorySettings
from platform_app.executors.memory.tools import (
    MemoryCoreDelete,
    MemoryCoreGet,
    MemoryCoreUpdate,
    MemorySave,
    MemorySearch,
    refuse_core_writes_from_a_helper,
)
from platform_app.memory import services
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def _user(ctx: ActivityContext[MemorySettings]) -> int:
    assert ctx.user_id is not None  # check_policy refused calls without one
    return ctx.user_id


@activity("memory_save")
def memory_save(args: MemorySave, ctx: ActivityContext[MemorySettings]) -> dict[str, Any]:
    out = services.memory_save(
        user_id=_user(ctx), content=args.content, source=args.source, settings=ctx.settings
    )
    ctx.emit_output(f"saved {out['saved_chunks']} chunk(s) from {out['source']}\n")
    return out


@activity("memory_search")
def memory_search(args: MemorySearch, ctx: ActivityContext[MemorySettings]) -> dict[str, Any]:
    out = services.memory_search(
        user_id=_user(ctx), query=args.query, top_k=args.top_k, settings=ctx.settings
    )
    ctx.emit_output(f"{out['count']} result(s), {out['mode']} search\n")
    return out


@activity("memory_core_get")
def memory_core_get(args: MemoryCoreGet, ctx: ActivityContext[MemorySettings]) -> dict[str, Any]:
    return services.memory_core_get(user_id=_user(ctx), settings=ctx.settings)


@activity("memory_core_update")
def memory_core_update(
    args: MemoryCoreUpdate, ctx: ActivityContext[MemorySettings]
) -> dict[str, Any]:
    refuse_core_writes_from_a_helper(ctx.conversation_id)  # again: binding may be old
    return services.memory_core_update(
        user_id=_user(ctx),
        section=args.section,
        key=args.key,
        value=args.value,
        settings=ctx.settings,
    )


@activity("memory_core_delete")
def memory_core_delete(
    args: MemoryCoreDelete, ctx: ActivityContext[MemorySettings]
) -> dict[str, Any]:
    refuse_core_writes_from_a_helper(ctx.conversation_id)
    return services.memory_core_delete(user_id=_user(ctx), section=args.section, key=args.key)
