"""Live MCP sessions of one process: started on demand, shared by its calls, restarted with
backoff, closed when idle.

Each worker process runs one event-loop thread ("mcp-runtime") holding at most one session per
(server, revision, workspace): a stdio server is one long-lived sandboxed process per worker
process, so N worker processes run N copies of a server (each with its own session; none is
shared across processes). Calls come from the worker's threads: ``call`` hands the coroutine
to the loop and waits, watching the call's cancel flag: Stop cancels the waiting request,
which makes the SDK send ``notifications/cancelled`` to the server.

A session that fails to start, or whose server exits or stops answering, is closed and
reported "down" with its last error (and the tail of the server's stderr); the next call starts
it again, but only after a backoff (1, 2, 4 … 60 s) so a crashing server is not restarted in a
tight loop. A session unused for the group's ``idle_shutdown_seconds`` is closed.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

from django.db import connection

from tools_app.errors import ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.mcp.launch import ServerSpec, http_streams, person_bearer, stdio_streams

logger = logging.getLogger(__name__)

JANITOR_SECONDS = 5.0
MAX_BACKOFF = 60.0
PING_TIMEOUT = 5.0

Progress = Callable[[float, float | None, str | None], None]


class CredentialRejected(ToolError):
    """The server refused the person's token (401) and it could not be renewed: their
    connection needs connecting again. Not the server being down: no backoff, no "down"."""

    def __init__(self, name: str) -> None:
        super().__init__(f"MCP server {name!r} refused the person's credential (401)")


@dataclass
class _Backoff:
    failures: int = 0
    next_try: float = 0.0
    error: str = ""


@dataclass(eq=False)
class _Live:
    spec: ServerSpec
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    session: Any = None
    sandbox_id: str = ""
    error: str = ""
    busy: int = 0
    last_used: float = field(default_factory=time.monotonic)
    stderr: Any = None
    task: asyncio.Task[None] | None = None
    auth: Any = None  # a per-person session's PersonBearer

    @property
    def refused(self) -> bool:
        return self.auth is not None and self.auth.rejected

    @property
    def alive(self) -> bool:
        return self.session is not None and not self.done.is_set() and not self.closing.is_set()

    def stderr_tail(self, limit: int = 600) -> str:
        if self.stderr is None:
            return ""
        try:
            self.stderr.flush()
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - limit))
            return " ".join(self.stderr.read().split())[-limit:]
        except (OSError, ValueError):
            return ""


def describe(exc: BaseException) -> str:
    """Words for an exception, unwrapping the exception groups anyio raises."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    error = getattr(exc, "error", None)  # MCPError
    if error is not None and getattr(error, "message", None):
        return str(error.message)
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, ToolError) else f"{type(exc).__name__}: {text}"


def _connection_closed(exc: BaseException) -> bool:
    from mcp_types import CONNECTION_CLOSED

    error = getattr(exc, "error", None)
    return getattr(error, "code", None) == CONNECTION_CLOSED


class McpRuntime:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._live: dict[tuple[str, str, str], _Live] = {}
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        self._backoff: dict[str, _Backoff] = {}
        self.on_list_changed: Callable[[str], None] | None = None
        self.on_state: Callable[[str, str, str], None] | None = None

    # --- the loop thread -------------------------------------------------------------------
    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._start_lock:
            if self._loop is None or not self._loop.is_running():
                loop = asyncio.new_event_loop()
                started = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(started.set)
                    loop.create_task(self._janitor())
                    loop.run_forever()

                self._thread = threading.Thread(target=run, name="mcp-runtime", daemon=True)
                self._thread.start()
                started.wait(10)
                self._loop = loop
            return self._loop

    def run(
        self,
        make: Callable[[], Awaitable[Any]],
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> Any:
        """Run ``make()`` on the loop; Stop (``cancel``) and ``timeout`` cancel it there."""
        loop = self._ensure_loop()
        finished = threading.Event()
        box: dict[str, Any] = {}

        async def runner() -> None:
            try:
                async with asyncio.timeout(timeout):  # no extra task, unlike wait_for
                    box["result"] = await make()
            except BaseException as exc:
                box["error"] = exc
            finally:
                finished.set()

        future = asyncio.run_coroutine_threadsafe(runner(), loop)
        while not finished.wait(0.02):
            if cancel is not None and cancel.is_set():
                future.cancel()  # cancels the request: the SDK tells the server
                finished.wait(5)
                raise ToolCancelled()
        error = box.get("error")
        if isinstance(error, TimeoutError):
            raise ToolTimeout(timeout)
        if isinstance(error, asyncio.CancelledError):
            raise ToolCancelled()
        if error is not None:
            raise error
        return box.get("result")

    # --- sessions ----------------------------------------------------------------------------
    def _report(self, name: str, state: str, error: str = "") -> None:
        if self.on_state is None:
            return
        callback = self.on_state

        def write() -> None:
            try:
                callback(name, state, error)
            except Exception:
                logger.exception("cannot record the state of MCP server %s", name)
            finally:
                connection.close()  # a pool thread: never keep a connection open

        assert self._loop is not None
        self._loop.run_in_executor(None, write)

    def _failed(self, name: str, error: str) -> None:
        backoff = self._backoff.setdefault(name, _Backoff())
        backoff.failures += 1
        delay = min(MAX_BACKOFF, 2.0 ** (backoff.failures - 1))
        backoff.next_try = time.monotonic() + delay
        backoff.error = error
        logger.warning("MCP server %s down (%s); next start in %.0f s", name, error, delay)
        self._report(name, "down", error)

    async def _own(self, live: _Live) -> None:
        """The task that owns a session's context managers (anyio scopes must be entered and
        left by the same task): open, initialise, wait to be closed."""
        spec = live.spec
        live.stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        try:
            from mcp.client.session import ClientSession
            from mcp_types import Implementation

            async with AsyncExitStack() as stack:
                if spec.transport == "stdio":
                    streams = stdio_streams(spec, live.stderr)
                else:
                    streams = http_streams(spec, live.auth)
                read, write, sandbox_id = await stack.enter_async_context(streams)
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        message_handler=self._message_handler(spec),  # type: ignore[arg-type]
                        client_info=Implementation(name="controlcenter", version="1"),
                    )
                )
                await session.initialize()
                live.session, live.sandbox_id = session, sandbox_id
                live.ready.set()
                await live.closing.wait()
        except asyncio.CancelledError:
            live.error = live.error or "stopped"
        except BaseException as exc:
            tail = live.stderr_tail()
            live.error = describe(exc) + (f" (server stderr: {tail})" if tail else "")
        finally:
            live.session = None
            live.done.set()
            if self._live.get(spec.key) is live:
                self._live.pop(spec.key, None)
            with contextlib.suppress(Exception):
                live.stderr.close()

    def _message_handler(self, spec: ServerSpec) -> Callable[[Any], Awaitable[None]]:
        async def handle(message: Any) -> None:
            if isinstance(message, Exception):
                logger.debug("MCP server %s transport error: %s", spec.name, message)
                return
            method = getattr(getattr(message, "root", message), "method", "")
            if method == "notifications/tools/list_changed" and self.on_list_changed:
                callback = self.on_list_changed
                assert self._loop is not None
                # A per-person session lists the tools again as its person ("u7-c3").
                name = f"{spec.name}@{spec.person}" if spec.person else spec.name
                self._loop.run_in_executor(None, _closing_db(callback), name)

        return handle

    async def session(self, spec: ServerSpec) -> _Live:
        live = self._live.get(spec.key)
        if live is not None and live.alive:
            return self._current(live, spec)
        lock = self._locks.setdefault(spec.key, asyncio.Lock())
        async with lock:
            live = self._live.get(spec.key)
            if live is not None and live.alive:
                return self._current(live, spec)
            backoff = self._backoff.get(spec.name)
            now = time.monotonic()
            if backoff is not None and backoff.failures and now < backoff.next_try:
                raise ToolError(
                    f"MCP server {spec.name!r} is down ({backoff.error}); the next restart "
                    f"attempt is in {backoff.next_try - now:.0f} s",
                    permanent=False,
                )
            for key, other in list(self._live.items()):  # this server, connected differently
                # Never one still starting: a caller with an older spec (a refresh that read
                # the source before an edit) would end the newer session before its first
                # call, and the server would look down.
                if key[0] != spec.name or other.busy or not other.ready.is_set():
                    continue
                # (or this person's session with values they have changed since)
                if key[1] != spec.digest or (
                    spec.person
                    and other.spec.person == spec.person
                    and other.spec.workspace_id == spec.workspace_id
                    and key != spec.key
                ):
                    other.closing.set()
            live = _Live(spec)
            if spec.person and spec.transport != "stdio":
                live.auth = person_bearer(spec.bearer, spec.renew)
            self._live[spec.key] = live
            live.task = asyncio.get_running_loop().create_task(self._own(live))
            ready = asyncio.ensure_future(live.ready.wait())
            done = asyncio.ensure_future(live.done.wait())
            finished, pending = await asyncio.wait(
                {ready, done},
                timeout=spec.settings.startup_timeout_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            for task in pending:
                task.cancel()
            if not live.alive:
                if live.refused:  # the person's token, not the server: nothing to back off
                    live.closing.set()
                    raise CredentialRejected(spec.name)
                if live.ready.is_set() and live.closing.is_set() and not live.error:
                    # It started, then another caller closed it (a newer connection of this
                    # server): not a failure of the server, nothing to back off.
                    raise ToolError(
                        f"MCP server {spec.name!r} was restarted with a newer configuration "
                        "meanwhile; try again",
                        permanent=False,
                    )
                if not finished:
                    live.error = (
                        f"did not start within {spec.settings.startup_timeout_seconds} s"
                        + (f" (server stderr: {live.stderr_tail()})" if live.stderr_tail() else "")
                    )
                live.closing.set()
                self._failed(spec.name, live.error or "the server did not start")
                raise ToolError(
                    f"MCP server {spec.name!r} could not be started: {live.error}",
                    permanent=False,
                )
            self._backoff.pop(spec.name, None)
            self._report(spec.name, "up", "")
            return live

    @staticmethod
    def _current(live: _Live, spec: ServerSpec) -> _Live:
        """A per-person session takes the token the call brings (renewed since, maybe)."""
        if live.auth is not None and spec.bearer:
            live.auth.token = spec.bearer
        return live

    async def _after_abandon(self, live: _Live) -> None:
        """A request was cancelled or timed out: a server that does not even answer a ping
        now is hung; close it (the next call starts a fresh one)."""
        session = live.session
        if session is None:
            return
        try:
            await asyncio.wait_for(session.send_ping(), PING_TIMEOUT)
        except BaseException:
            live.closing.set()
            self._failed(live.spec.name, "the server stopped answering (no reply to ping)")

    async def call_tool(
        self,
        spec: ServerSpec,
        name: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
    ) -> tuple[Any, str]:
        live = await self.session(spec)
        live.busy += 1
        live.last_used = time.monotonic()

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            if progress is not None:
                progress(value, total, message)

        try:
            result = await live.session.call_tool(
                name, arguments, progress_callback=on_progress if progress else None
            )
        except (asyncio.CancelledError, TimeoutError):
            asyncio.get_running_loop().create_task(self._after_abandon(live))
            raise
        except ToolError:
            raise
        except Exception as exc:
            if live.refused:
                raise CredentialRejected(spec.name) from None
            if _connection_closed(exc) or live.done.is_set():
                live.closing.set()
                tail = live.stderr_tail()
                error = "the server closed the connection" + (
                    f" (server stderr: {tail})" if tail else ""
                )
                self._failed(spec.name, error)
                raise ToolError(f"MCP server {spec.name!r}: {error}", permanent=False) from None
            raise ToolError(f"MCP server {spec.name!r}: {describe(exc)}") from None
        finally:
            live.busy -= 1
            live.last_used = time.monotonic()
        return result, live.sandbox_id

    async def list_tools(self, spec: ServerSpec) -> list[Any]:
        live = await self.session(spec)
        tools: list[Any] = []
        cursor = None
        from mcp_types import PaginatedRequestParams

        for _ in range(100):
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await live.session.list_tools(params=params)
            except Exception:
                if live.refused:
                    raise CredentialRejected(spec.name) from None
                raise
            tools.extend(page.tools)
            cursor = getattr(page, "next_cursor", None)
            if not cursor:
                break
        live.last_used = time.monotonic()
        return tools

    async def _janitor(self) -> None:
        while True:
            await asyncio.sleep(JANITOR_SECONDS)
            now = time.monotonic()
            for live in list(self._live.values()):
                idle = live.spec.settings.idle_shutdown_seconds
                if idle and not live.busy and now - live.last_used > idle:
                    logger.info("closing idle MCP session %s", live.spec.key)
                    live.closing.set()

    # --- housekeeping ----------------------------------------------------------------------
    def close_all(self, timeout: float = 10.0) -> None:
        loop = self._loop
        if loop is None or not loop.is_running():
            return

        async def close() -> None:
            lives = list(self._live.values())
            for live in lives:
                live.closing.set()
            if lives:
                await asyncio.wait(
                    [asyncio.ensure_future(live.done.wait()) for live in lives], timeout=timeout
                )

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), loop).result(timeout + 1)

    def forget_backoff(self, name: str) -> None:
        self._backoff.pop(name, None)

    def sessions(self) -> list[tuple[str, str, str]]:
        return [k for k, live in self._live.items() if live.alive]


def _closing_db(fn: Callable[[str], None]) -> Callable[[str], None]:
    def wrapped(name: str) -> None:
        try:
            fn(name)
        except Exception:
            logger.exception("MCP tools/list_changed handling failed for %s", name)
        finally:
            connection.close()  # a pool thread: never keep a connection open

    return wrapped


_runtime: McpRuntime | None = None
_runtime_lock = threading.Lock()


def runtime() -> McpRuntime:
    global _runtime
    with _runtime_lock:
        if _runtime is None:
            _runtime = McpRuntime()  # services.mcp_runtime() attaches the callbacks
        return _runtime


def _after_fork() -> None:
    global _runtime
    _runtime = None  # the loop thread did not survive the fork


def _at_exit() -> None:
    if _runtime is not None:
        _runtime.close_all(timeout=5)


os.register_at_fork(after_in_child=_after_fork)
atexit.register(_at_exit)
