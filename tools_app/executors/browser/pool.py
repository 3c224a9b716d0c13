"""The per-process browser pool: one Playwright driver, one warm Chromium, one context per
conversation, all owned by a single thread running an asyncio loop.

Playwright objects belong to the loop that created them, and activities run on arbitrary
Celery threads, so every browser operation is a coroutine submitted to the pool's loop with
``run_coroutine_threadsafe``; the calling thread waits in 50 ms slices, so Stop (the call's
cancel event) and the deadline are honoured even while Chromium is busy. A cancelled or
overrun action has its task cancelled and its page closed (the context and its cookies stay;
the next call reopens the last URL). A forked child (Celery prefork) never touches its
parent's pool: ``get_pool`` notices the new pid and starts a fresh one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from playwright.async_api import Browser, Playwright, async_playwright
from playwright.async_api import Error as PlaywrightError

from tools_app.errors import PolicyDenied, ToolCancelled, ToolError, ToolTimeout
from tools_app.executors.browser import handoff
from tools_app.executors.browser.actions import Action, ActionCtx, first_line, translate
from tools_app.executors.browser.chromium import (
    LAUNCH_ARGS,
    Executable,
    resolve_executable,
    sandbox_enabled,
)
from tools_app.executors.browser.guard import Judge, Policy
from tools_app.executors.browser.handoff import CONTEXT_IDLE_SECONDS
from tools_app.executors.browser.session import CallTrace, Session
from tools_app.executors.browser.settings import BrowserSettings
from tools_app.executors.browser.socks import PinningProxy

logger = logging.getLogger(__name__)
T = TypeVar("T")

BROWSER_IDLE_SECONDS = 1800.0
_SLICE = 0.05


class _BrowserGone(Exception):
    """Chromium died under an action: relaunch and try once more."""


def _fingerprint(settings: BrowserSettings) -> str:
    baked = settings.model_dump(
        include={
            "viewport_width", "viewport_height", "javascript_enabled",
            "allowed_domains", "private_allowed",
        }
    )  # fmt: skip
    return json.dumps(baked, sort_keys=True)


class BrowserPool:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="browser-pool")
        self._thread.daemon = True
        self._thread.start()
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._sessions: dict[str, Session] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._launch_lock = asyncio.Lock()
        self._policy = Policy()
        self._proxy = PinningProxy(lambda: self._policy)
        self._closing = False
        self._lost = False
        self._last_used = time.monotonic()
        self.executable: Executable | None = None
        self.version = ""
        self.launches = 0
        self.relaunches = 0

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # --- called from any thread -------------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def run(
        self,
        *,
        key: str,
        settings: BrowserSettings,
        action: Action,
        timeout: float,
        cancel: threading.Event,
        emit: Callable[[str], None],
    ) -> dict[str, Any]:
        a = ActionCtx(time.monotonic() + timeout, timeout, settings, CallTrace(emit=emit))
        future = asyncio.run_coroutine_threadsafe(self._execute(key, action, a), self._loop)
        hard_deadline = a.deadline + 1.5  # Playwright's own timeouts normally fire first
        while True:
            done, _ = concurrent.futures.wait([future], timeout=_SLICE)
            if done:
                return future.result()
            if cancel.is_set():
                future.cancel()
                raise ToolCancelled()
            if time.monotonic() >= hard_deadline:
                future.cancel()
                raise ToolTimeout(timeout)

    def reap(
        self, context_idle: float = CONTEXT_IDLE_SECONDS, browser_idle: float = BROWSER_IDLE_SECONDS
    ) -> int:
        return self.submit(self._reap(context_idle, browser_idle), timeout=30)

    def browser_pid(self) -> int | None:
        return self.submit(self._browser_pid(), timeout=10)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.submit(self._shutdown(), timeout=15)
        self._loop.call_soon_threadsafe(self._loop.stop)

    def stats(self) -> dict[str, Any]:
        browser = self._browser
        return {
            "process": self.pid,
            "running": bool(browser is not None and browser.is_connected()),
            "version": self.version,
            "contexts": len(self._sessions),
            "launches": self.launches,
            "relaunches": self.relaunches,
            "proxied_connections": self._proxy.connections,
        }

    # --- on the pool's loop -----------------------------------------------------------
    async def _execute(self, key: str, action: Action, a: ActionCtx) -> dict[str, Any]:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            self._policy = Policy.of(a.settings.allowed_domains, a.settings.private_allowed)
            relaunched = await self._ensure_browser()
            try:
                out = await self._attempt(key, action, a)
            except _BrowserGone:
                a.trace.emit("Chromium stopped during the action; relaunching it\n")
                await self._ensure_browser()
                relaunched = True
                out = await self._attempt(key, action, a)
            except asyncio.CancelledError:
                await self._abandon(key)
                raise
            finally:
                self._last_used = time.monotonic()
        if relaunched:
            a.trace.emit("Chromium had stopped (crashed or killed); it was relaunched\n")
            out["browser_relaunched"] = True
        return out

    async def _attempt(self, key: str, action: Action, a: ActionCtx) -> dict[str, Any]:
        try:
            session = await self._session(key, a, restore=action.restores_page)
        except PlaywrightError as exc:
            if await self._died(exc):
                raise _BrowserGone() from exc
            raise ToolError(f"could not prepare the browser: {first_line(exc)}") from exc
        session.attach(a.trace)
        try:
            try:
                out = await self._act(session, action, a)
            except ToolError as err:
                await session.leave_error_page(min(a.ms(), 3000))
                if not isinstance(err, PolicyDenied):
                    err.data = {**await session.where(), **err.data}
                raise
            return {**await session.where(), **out, **a.trace.summary()}
        finally:
            session.trace = None
            session.last_used = time.monotonic()
            if not await self._browser_gone(wait=0):
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(session.save(), 5)

    async def _act(self, session: Session, action: Action, a: ActionCtx) -> dict[str, Any]:
        """Run the action; a crashed page is reopened and the action tried once more."""
        for attempt in (1, 2):
            try:
                return await action.fn(session, a, **action.kwargs)
            except PlaywrightError as exc:
                if await self._died(exc):
                    raise _BrowserGone() from exc
                crashed = session.page_crashed and action.restores_page and session.last_url
                if attempt == 2 or not crashed:
                    raise translate(exc, action, a, self._proxy_refusal(exc, a)) from exc
                a.trace.emit("the page crashed; reopening it\n")
                a.trace.notes.append("the page crashed and was reopened")
                await session.restore(a.trace, a.ms())
        raise AssertionError("unreachable")

    def _proxy_refusal(self, exc: PlaywrightError, a: ActionCtx) -> tuple[str, str] | None:
        """(url, reason) when the pinning proxy refused what this action tried to reach."""
        message = str(exc)
        if "ERR_SOCKS" not in message and "ERR_PROXY" not in message:
            return None
        candidates = [w for w in message.split() if w.startswith(("http://", "https://"))]
        for url in [*a.trace.redirects, *candidates]:
            try:
                host = urlsplit(url).hostname or ""
            except ValueError:
                continue
            reason = self._proxy.refusal_for(host, a.trace.started)
            if reason is not None:
                return url, reason
        return None

    async def _session(self, key: str, a: ActionCtx, *, restore: bool) -> Session:
        assert self._browser is not None
        fingerprint = _fingerprint(a.settings)
        stored = handoff.load(key)
        session = self._sessions.get(key)
        if session is not None:
            if session.fingerprint == fingerprint and (
                stored is None or stored["seq"] == session.seq
            ):
                if restore and not session.page_usable() and session.last_url:
                    await session.restore(a.trace, a.ms())
                return session
            await session.close()
            del self._sessions[key]
        context = await self._browser.new_context(
            viewport={"width": a.settings.viewport_width, "height": a.settings.viewport_height},
            java_script_enabled=a.settings.javascript_enabled,
            service_workers="block",
            accept_downloads=False,
        )
        session = Session(key, context, fingerprint, Judge(self._policy), self._proxy.refusal_for)
        await session.install_guards()
        self._sessions[key] = session
        if stored is not None:
            session.seq = stored["seq"]
            session.last_url = str(stored.get("url") or "")
            cookies = stored.get("cookies") or []
            with contextlib.suppress(PlaywrightError, TypeError):
                await context.add_cookies(cookies)
            if restore and session.last_url:
                await session.restore(a.trace, a.ms())
        return session

    async def _abandon(self, key: str) -> None:
        session = self._sessions.get(key)
        if session is None or session.page is None:
            return
        page, session.page = session.page, None
        with contextlib.suppress(Exception):
            await asyncio.wait_for(page.close(), 3)

    async def _died(self, exc: PlaywrightError) -> bool:
        """Whether ``exc`` came from Chromium dying (the disconnect may arrive just after)."""
        text = str(exc)
        closing = ("has been closed", "crashed", "Connection closed", "disconnected")
        return await self._browser_gone(wait=1.0 if any(w in text for w in closing) else 0)

    async def _browser_gone(self, wait: float = 1.0) -> bool:
        deadline = time.monotonic() + wait
        while True:
            if self._browser is None or not self._browser.is_connected():
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)

    async def _ensure_browser(self) -> bool:
        """Launch Chromium if needed; True when it replaces one that died."""
        async with self._launch_lock:
            if self._browser is not None and self._browser.is_connected():
                return False
            lost = self._lost or self._browser is not None
            for session in self._sessions.values():
                await session.close()
            self._sessions.clear()
            await self._launch()
            self._lost = False
            if lost:
                self.relaunches += 1
            return lost

    async def _launch(self) -> None:
        for attempt in (1, 2):
            try:
                if self._playwright is None:
                    self._playwright = await async_playwright().start()
                executable = resolve_executable(bundled=self._playwright.chromium.executable_path)
                port = await self._proxy.start()
                browser = await self._playwright.chromium.launch(
                    executable_path=executable.path,
                    args=LAUNCH_ARGS,
                    proxy={"server": f"socks5://127.0.0.1:{port}"},
                    chromium_sandbox=sandbox_enabled(),
                    timeout=30_000,
                )
                break
            except ImproperlyConfigured as exc:
                raise ToolError(f"the browser is misconfigured: {exc}") from exc
            except PlaywrightError as exc:
                # A dead driver fails every launch: start a new one once.
                with contextlib.suppress(Exception):
                    if self._playwright is not None:
                        await self._playwright.stop()
                self._playwright = None
                if attempt == 2:
                    raise ToolError(f"could not start Chromium: {first_line(exc)}") from exc
        self._browser, self.executable, self.version = browser, executable, browser.version
        self.launches += 1
        browser.on("disconnected", self._on_disconnected)
        logger.info("Chromium %s started (%s)", browser.version, executable.shown)

    def _on_disconnected(self, browser: Browser) -> None:
        if browser is self._browser and not self._closing:
            self._lost = True
            logger.warning("Chromium disconnected (crashed or killed); it relaunches on next use")

    async def _reap(self, context_idle: float, browser_idle: float) -> int:
        now = time.monotonic()
        closed = 0
        for key, session in list(self._sessions.items()):
            lock = self._locks.get(key)
            if (lock is None or not lock.locked()) and now - session.last_used > context_idle:
                await session.close()
                self._sessions.pop(key, None)
                self._locks.pop(key, None)
                closed += 1
        idle_browser = self._browser is not None and now - self._last_used > browser_idle
        if idle_browser and not self._sessions and not self._launch_lock.locked():
            await self._shutdown()
        return closed

    async def _shutdown(self) -> None:
        self._closing = True
        try:
            for session in self._sessions.values():
                await session.close()
            self._sessions.clear()
            if self._browser is not None:
                with contextlib.suppress(Exception):
                    await self._browser.close()
            self._browser = None
            if self._playwright is not None:
                with contextlib.suppress(Exception):
                    await self._playwright.stop()
            self._playwright = None
        finally:
            self._closing = False

    async def _browser_pid(self) -> int | None:
        if self._browser is None or not self._browser.is_connected():
            return None
        cdp = await self._browser.new_browser_cdp_session()
        try:
            info = await cdp.send("SystemInfo.getProcessInfo")
        finally:
            with contextlib.suppress(PlaywrightError):
                await cdp.detach()
        for process in info.get("processInfo", []):
            if process.get("type") == "browser":
                return int(process["id"])
        return None


_pool: BrowserPool | None = None
_pool_lock = threading.Lock()


def get_pool() -> BrowserPool:
    """This process's pool, started on first use (and again in a forked child)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid() or not _pool.alive:
            _pool = BrowserPool()
        return _pool


def existing_pool() -> BrowserPool | None:
    pool = _pool
    return pool if pool is not None and pool.pid == os.getpid() and pool.alive else None


def _forget_after_fork() -> None:
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)
