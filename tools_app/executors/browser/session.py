"""One conversation's browser context in this process, with its guards installed.

Routing (``context.route("**/*")``) sees every request of every page of the context: page
loads, subresources, iframes, fetch/XHR, workers' requests, and popups' first navigation.
Each is judged by ``guard.Judge`` and aborted with ``blockedbyclient`` when refused.
WebSockets are routed separately (``context.route_web_socket``): refused ones are closed
with code 1008 before any connection is made, allowed ones are connected to the server.
Service workers are blocked by the context option, downloads refused (``accept_downloads``
off) and reported.

Popups never load: their first navigation is aborted and the popup page closed at once.
When the popup came from a ``browser_click`` (a ``target=_blank`` link or ``window.open`` in
a click handler) the current page follows its URL instead, through the same checks, so the
conversation keeps exactly one page and ``browser_back`` returns to the opener.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Download, Page, Request, Route, WebSocketRoute
from playwright.async_api import Error as PlaywrightError

from tools_app.executors.browser import handoff
from tools_app.executors.browser.guard import Judge

logger = logging.getLogger(__name__)

MAX_NOTES = 20


@dataclass
class CallTrace:
    """What happened around one call: shown on the card and returned to the model."""

    emit: Callable[[str], None]
    blocked: list[dict[str, str]] = field(default_factory=list)
    blocked_count: int = 0
    popups: list[dict[str, str | None]] = field(default_factory=list)
    downloads: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def block(self, url: str, reason: str, kind: str) -> None:
        """Listed up to ``MAX_NOTES``, and past that the first of each kind not yet listed
        (a page's twenty blocked images must not hide its blocked frame); the rest is counted
        (``blocked_requests_total``)."""
        self.blocked_count += 1
        if len(self.blocked) < MAX_NOTES or all(b["kind"] != kind for b in self.blocked):
            self.blocked.append({"url": url[:300], "kind": kind, "reason": reason})
            self.emit(f"blocked {kind} {url[:200]}: {reason}\n")

    def navigation_block(self) -> dict[str, str] | None:
        for entry in self.blocked:
            if entry["kind"] == "navigation":
                return entry
        return None

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.blocked:
            out["blocked_requests"] = self.blocked
            if self.blocked_count > len(self.blocked):
                out["blocked_requests_total"] = self.blocked_count
        refused = [p["url"] for p in self.popups if p.get("followed") != "yes"]
        if refused:
            out["popups_closed"] = refused
        if self.downloads:
            out["downloads_refused"] = self.downloads
        if self.notes:
            out["notes"] = self.notes
        return out


class Session:
    def __init__(
        self,
        key: str,
        context: BrowserContext,
        fingerprint: str,
        judge: Judge,
        refusal: Callable[[str, float], str | None],
    ) -> None:
        self.key = key
        self.refusal = refusal  # why the pinning proxy refused a host, if it did
        self.context = context
        self.fingerprint = fingerprint
        self.judge = judge
        self.page: Page | None = None
        self.page_crashed = False
        self.trace: CallTrace | None = None
        self.seq = 0
        self.last_url = ""
        self.last_used = time.monotonic()
        self._opening_page = False
        self._idle_blocks: list[tuple[str, str, str]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def install_guards(self) -> None:
        await self.context.route("**/*", self._on_route)
        await self.context.route_web_socket(re.compile(r".*"), self._on_websocket)
        self.context.on("page", self._on_page)
        self.context.on("request", self._on_request)
        self.context.on("requestfailed", self._on_request_failed)

    # --- pages ----------------------------------------------------------------------------
    def page_usable(self) -> bool:
        return self.page is not None and not self.page.is_closed() and not self.page_crashed

    async def new_page(self) -> Page:
        if self.page is not None and not self.page.is_closed():
            with contextlib.suppress(PlaywrightError):
                await self.page.close()
        self._opening_page = True
        try:
            page = await self.context.new_page()
        finally:
            self._opening_page = False
        page.on("download", self._on_download)
        page.on("crash", self._on_crash)
        self.page, self.page_crashed = page, False
        return page

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.context.close()

    def _on_crash(self, page: Page) -> None:
        if page is self.page:
            self.page_crashed = True

    def _on_page(self, page: Page) -> None:
        if self._opening_page or page is self.page:
            return
        self._spawn(self._close_quietly(page))

    def _on_download(self, download: Download) -> None:
        if self.trace is not None:
            self.trace.downloads.append(download.url[:300])
            self.trace.emit(f"download refused: {download.url[:200]}\n")
        self._spawn(self._cancel_download(download))

    async def _cancel_download(self, download: Download) -> None:
        with contextlib.suppress(PlaywrightError):
            await download.cancel()

    async def _close_quietly(self, page: Page) -> None:
        with contextlib.suppress(PlaywrightError):
            await page.close()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- state ----------------------------------------------------------------------------
    async def where(self) -> dict[str, Any]:
        page = self.page
        if page is None or page.is_closed():
            return {"url": "", "title": ""}
        title = ""
        with contextlib.suppress(Exception):  # a page stuck in a script has no title to give
            title = await asyncio.wait_for(page.title(), 2)
        return {"url": page.url, "title": title}

    async def restore(self, trace: CallTrace, timeout_ms: float) -> None:
        """A new page at the last URL (after a crash, or in another process)."""
        self.trace = trace
        page = await self.new_page()
        try:
            await page.goto(self.last_url, wait_until="domcontentloaded", timeout=timeout_ms)
        except PlaywrightError as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            trace.notes.append(f"could not reopen {self.last_url}: {first}")
            with contextlib.suppress(PlaywrightError):
                await page.close()
            self.page = None
            return
        trace.emit(f"reopened {self.last_url}\n")
        trace.notes.append(f"the page was reopened at {self.last_url}")

    async def leave_error_page(self, timeout_ms: float) -> None:
        """After a blocked or failed navigation Chromium shows its error page; go back to the
        page the conversation was on, so the next action finds it."""
        page = self.page
        if page is None or page.is_closed() or not page.url.startswith("chrome-error:"):
            return
        with contextlib.suppress(Exception):
            await page.go_back(wait_until="domcontentloaded", timeout=timeout_ms)
        if page.url.startswith("chrome-error:") and self.last_url:
            with contextlib.suppress(Exception):
                await page.goto(self.last_url, wait_until="domcontentloaded", timeout=timeout_ms)

    async def save(self) -> None:
        """Hand the state over to whichever process serves the next call (handoff.py)."""
        page = self.page
        if page is not None and not page.is_closed() and page.url.startswith(("http:", "https:")):
            self.last_url = page.url
        self.seq += 1
        cookies = [dict(c) for c in await self.context.cookies()]
        handoff.save(self.key, seq=self.seq, url=self.last_url, cookies=cookies)

    # --- routing --------------------------------------------------------------------------
    def _is_popup(self, request: Request) -> bool:
        if not request.is_navigation_request():
            return False
        try:
            frame = request.frame
        except PlaywrightError:
            # A navigation issued before its frame exists is a new page's first one: a popup.
            return not self._opening_page
        return frame.parent_frame is None and frame.page is not self.page

    def _kind(self, request: Request) -> str:
        if request.is_navigation_request():
            with contextlib.suppress(PlaywrightError):
                if request.frame.parent_frame is None:
                    return "navigation"
            return "frame"
        return request.resource_type or "request"

    def _on_request(self, request: Request) -> None:
        # Playwright routes only the first URL of a redirect chain; the pinning proxy judges
        # the rest. Remember them so a refusal can be explained.
        if request.redirected_from is not None and self.trace is not None:
            self.trace.redirects.append(request.url)

    def _on_request_failed(self, request: Request) -> None:
        failure = request.failure or ""
        if self.trace is None or not any(k in failure for k in ("ERR_SOCKS", "ERR_PROXY")):
            return
        try:
            host = urlsplit(request.url).hostname or ""
        except ValueError:
            return
        reason = self.refusal(host, self.trace.started)
        if reason is not None:
            self._block(request.url, reason, self._kind(request))

    def _block(self, url: str, reason: str, kind: str) -> None:
        if self.trace is not None:
            self.trace.block(url, reason, kind)
            return
        # A page keeps running between calls (timers, late scripts): report those refusals
        # with the next call instead of losing them.
        logger.debug("browser %s: blocked %s between calls: %s", self.key, url, reason)
        if len(self._idle_blocks) < MAX_NOTES:
            self._idle_blocks.append((url, reason, kind))

    def attach(self, trace: CallTrace) -> None:
        """Make ``trace`` the running call's, handing it what was refused since the last."""
        self.trace = trace
        for url, reason, kind in self._idle_blocks:
            trace.block(url, reason, f"{kind} (between calls)")
        self._idle_blocks.clear()

    async def _on_route(self, route: Route) -> None:
        request = route.request
        url = request.url
        try:
            reason = await self.judge.verdict(url)
            if self._is_popup(request):
                if self.trace is not None:
                    self.trace.popups.append({"url": url, "reason": reason})
                    self.trace.emit(f"popup closed: {url[:200]}\n")
                if reason is not None:
                    self._block(url, reason, "popup")
                await route.abort("blockedbyclient")
                return
            if reason is not None:
                self._block(url, reason, self._kind(request))
                await route.abort("blockedbyclient")
                return
            await route.continue_()
        except PlaywrightError:
            pass  # the page or context went away while we were judging

    async def _on_websocket(self, ws: WebSocketRoute) -> None:
        reason = await self.judge.verdict(ws.url)
        if reason is not None:
            self._block(ws.url, reason, "websocket")
            with contextlib.suppress(PlaywrightError):
                await ws.close(code=1008, reason="blocked by policy")
            return
        ws.connect_to_server()
