"""Overhead of an MCP tool call through our binding vs the same server called directly.

Server: ``mcp-server-time`` (from the package index) over stdio in the bubblewrap sandbox
(``BENCH_MCP_SANDBOX=docker`` for Docker). Both paths talk to a server started by the same
sandbox launcher, so the sandbox costs the same on both sides; what differs is ours.

- ``direct``: the official SDK's ``ClientSession.call_tool`` on one open session (baseline).
- ``runtime``: our per-process session pool (``McpRuntime``), called from a worker thread the
  way the activity does: the thread hand-off, cancel watching and result conversion.
- ``governed``: ``toolcall_bind`` + ``toolcall_execute`` — schema check, policy, limits, the
  ToolCall rows, the watchdog, the card events and the audit record — in embedded mode.
- ``builtin``: the same governed path around our own in-process ``current_time``: the cost of
  governance itself, which every tool pays, MCP or not.

Ratios are medians over the direct median, measured in the same run.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from bench.common import ROOT, emit, setup_django, stats_ms

N = 300
BLOCK = 20
WARMUP = 20
VENV = ROOT / "var" / "mcp-venv-test"
BACKEND = os.environ.get("BENCH_MCP_SANDBOX", "bubblewrap")


def measure() -> dict[str, Any]:
    os.environ["MCP_SERVERS_VENV"] = str(VENV)
    setup_django("embedded")
    from django.contrib.auth import get_user_model

    from tools_app.executors.mcp.launch import stdio_streams
    from tools_app.executors.mcp.runtime import runtime
    from tools_app.executors.mcp.services import (
        mcp_install,
        mcp_refresh,
        mcp_server_add,
        server_spec,
    )
    from tools_app.models import ToolCall
    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind
    from tools_app.services.execution import toolcall_execute

    if not (VENV / "bin" / "mcp-server-time").exists():
        mcp_install(["mcp-server-time"], venv=VENV)
    user = get_user_model().objects.create_user("bench-mcp")
    source = mcp_server_add(
        name="bench-time", command="mcp-server-time", settings={"sandbox_backend": BACKEND}
    )
    mcp_refresh(source)
    # A new source is granted to nobody but admins (issue 22): granted to everyone here, as an
    # admin would, so the member's calls pass binding as any granted call does.
    from tools_app.models import ToolGrant
    from tools_app.services.grants import everyone_group

    ToolGrant.objects.create(group=everyone_group(), kind="source", name=source.name)
    source.refresh_from_db()
    spec = server_spec(source)
    args = {"timezone": "Europe/Berlin"}

    # direct: the SDK client on its own open session, on its own event-loop thread; each
    # call is timed inside that loop, so no thread hand-off is counted on its side.
    import threading

    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    opened: dict[str, Any] = {}
    close = asyncio.Event()

    async def own_session() -> None:
        from mcp.client.session import ClientSession

        with open(os.devnull, "w") as errlog:
            async with (
                stdio_streams(spec, errlog) as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                opened["session"] = session
                await close.wait()

    owner = asyncio.run_coroutine_threadsafe(own_session(), loop)
    while "session" not in opened:
        time.sleep(0.01)

    async def direct_block(n: int) -> list[float]:
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            result = await opened["session"].call_tool("get_current_time", args)
            samples.append(time.perf_counter() - started)
            assert not result.is_error
        return samples

    rt = runtime()
    ctx = BindContext(user_id=user.pk, conversation_id=None, source="api")

    def runtime_block(n: int) -> list[float]:
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            result, _ = rt.run(
                lambda: rt.call_tool(spec, "get_current_time", args), timeout=30, cancel=None
            )
            samples.append(time.perf_counter() - started)
            assert not result.is_error
        return samples

    def governed_block(n: int, tool: str = "get_current_time") -> list[float]:
        samples = []
        for _ in range(n):
            started = time.perf_counter()
            call = toolcall_bind(request=CallRequest(tool=tool, arguments=dict(args)), ctx=ctx)
            toolcall_execute(tool_call_id=call.pk)
            samples.append(time.perf_counter() - started)
        last = ToolCall.objects.get(pk=call.pk)
        assert last.status == "succeeded", last.result
        return samples

    # Warm up, then alternate short blocks so a busy machine's drift hits every path alike.
    asyncio.run_coroutine_threadsafe(direct_block(WARMUP), loop).result()
    runtime_block(WARMUP)
    governed_block(WARMUP)
    direct_samples: list[float] = []
    runtime_samples: list[float] = []
    governed_samples: list[float] = []
    builtin_samples: list[float] = []
    for _ in range(N // BLOCK):
        builtin_samples += governed_block(BLOCK, "current_time")
        direct_samples += asyncio.run_coroutine_threadsafe(direct_block(BLOCK), loop).result()
        runtime_samples += runtime_block(BLOCK)
        governed_samples += governed_block(BLOCK)
    loop.call_soon_threadsafe(close.set)
    owner.result(timeout=10)
    rt.close_all()

    out: dict[str, Any] = {
        "server": f"mcp-server-time over stdio ({BACKEND} sandbox)",
        "direct_sdk": stats_ms(direct_samples),
        "runtime_pool": stats_ms(runtime_samples),
        "governed_bind_execute_audit": stats_ms(governed_samples),
        # Context: the same governance around our own in-process Time tool (no MCP at all).
        "builtin_current_time_governed": stats_ms(builtin_samples),
    }
    base = out["direct_sdk"]["median_ms"]
    out["runtime_vs_direct_ratio"] = round(out["runtime_pool"]["median_ms"] / base, 2)
    out["governed_vs_direct_ratio"] = round(
        out["governed_bind_execute_audit"]["median_ms"] / base, 2
    )
    out["mcp_specific_ms"] = round(
        out["governed_bind_execute_audit"]["median_ms"]
        - out["builtin_current_time_governed"]["median_ms"],
        3,
    )
    out["target_ratio"] = 1.3
    return out


if __name__ == "__main__":
    emit(measure())
