"""The MCP runtime's sessions when two callers hold different specs of one server at once: an
edit in the Tools Manager while a refresh that read the source before it is still starting a
session (CI saw "MCP server … is down (the server did not start)" after an edit, the older
caller having closed the newer session before its first call). The server's own process is
replaced by a stand-in that starts when told; the runtime's logic is the real one."""

from __future__ import annotations

import asyncio

from tools_app.errors import ToolError
from tools_app.executors.mcp.launch import ServerSpec
from tools_app.executors.mcp.runtime import McpRuntime, _Live


def stand_in(runtime: McpRuntime, gate: asyncio.Event) -> None:
    async def own(live: _Live) -> None:
        try:
            await gate.wait()  # starting
            live.session = object()
            live.ready.set()
            await live.closing.wait()
        finally:
            live.session = None
            live.done.set()
            if runtime._live.get(live.spec.key) is live:
                runtime._live.pop(live.spec.key, None)

    runtime._own = own  # type: ignore[method-assign]


def spec(command: str, workspace: str = "") -> ServerSpec:
    return ServerSpec(
        name="probe", revision=1, transport="stdio", command=(command,), workspace_id=workspace
    )


def test_an_older_caller_does_not_end_a_session_that_is_still_starting() -> None:
    async def scenario() -> McpRuntime:
        runtime = McpRuntime()
        gate = asyncio.Event()
        stand_in(runtime, gate)
        newer = asyncio.create_task(runtime.session(spec("server --new", "w1")))
        await asyncio.sleep(0.01)  # the newer session is starting
        older = asyncio.create_task(runtime.session(spec("server --old")))
        await asyncio.sleep(0.01)
        gate.set()
        first, second = await newer, await older
        assert first.alive and second.alive  # (checked before the loop ends and closes them)
        return runtime

    runtime = asyncio.run(scenario())
    assert runtime._backoff == {}  # nothing counted as the server failing


def test_the_next_call_with_the_newer_spec_closes_the_older_session() -> None:
    async def scenario() -> None:
        runtime = McpRuntime()
        gate = asyncio.Event()
        gate.set()
        stand_in(runtime, gate)
        older = await runtime.session(spec("server --old"))
        newer = await runtime.session(spec("server --new"))
        await asyncio.sleep(0.01)
        assert newer.alive and not older.alive

    asyncio.run(scenario())


def test_a_session_closed_by_a_newer_one_right_after_it_started_is_no_failure() -> None:
    async def scenario() -> tuple[BaseException | None, McpRuntime]:
        runtime = McpRuntime()
        gate = asyncio.Event()
        stand_in(runtime, gate)
        first = asyncio.create_task(runtime.session(spec("server --old")))
        await asyncio.sleep(0.01)
        gate.set()
        await asyncio.sleep(0)  # it has started: ready, its caller not yet woken
        second = asyncio.create_task(runtime.session(spec("server --new")))
        error: BaseException | None = None
        try:
            await first
        except ToolError as exc:
            error = exc
        await second
        return error, runtime

    error, runtime = asyncio.run(scenario())
    if error is not None:  # the newer caller got there first: a retryable error, no backoff
        assert "newer configuration" in str(error) and not error.permanent
    assert runtime._backoff == {}
