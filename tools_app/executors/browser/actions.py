"""The seven page actions, as coroutines run on the browser thread.

Each gets the conversation's ``Session`` and an ``ActionCtx`` (deadline, settings, trace)
and returns what it produced; the pool adds the page's URL and title. Every Playwright wait
is bounded by the time left in the call. Raw Playwright errors are left to the pool, which
tells a dead browser (relaunch and retry) from a failed action (``translate``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import FloatRect, Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeout

from tools_app.errors import PolicyDenied, ToolError, ToolTimeout
from tools_app.executors.browser.session import CallTrace, Session
from tools_app.executors.browser.settings import BrowserSettings

SETTLE_SECONDS = 5.0  # longest we wait for "load" after the DOM is ready
POPUP_GRACE_SECONDS = 0.15  # a click's popup is routed just after the click returns
MAX_SCREENSHOT_HEIGHT = 10_000
MAX_LINKS = 500

_LINKS_JS = """(els, max) => {
  const out = [], seen = new Set();
  for (const el of els) {
    const anchors = el.matches('a[href]') ? [el] : el.querySelectorAll('a[href]');
    for (const a of anchors) {
      if (out.length >= max) return out;
      const text = (a.innerText || a.textContent || '').trim().replace(/\\s+/g, ' ');
      const key = a.href + '\\n' + text;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({text: text.slice(0, 200), url: a.href});
    }
  }
  return out;
}"""


@dataclass
class ActionCtx:
    deadline: float
    timeout: float
    settings: BrowserSettings
    trace: CallTrace

    def ms(self) -> float:
        return max(1.0, (self.deadline - time.monotonic()) * 1000)


ActionFn = Callable[..., Awaitable[dict[str, Any]]]


@dataclass
class Action:
    name: str
    fn: ActionFn
    kwargs: dict[str, Any]
    restores_page: bool = True  # reopen the last URL when the page was lost


def _require_page(s: Session) -> Page:
    if not s.page_usable() or s.page is None or s.page.url in ("", "about:blank"):
        raise ToolError("no page is open in this conversation's browser; call browser_open first")
    if s.page.url.startswith("chrome-error:"):
        raise ToolError("the last navigation failed and no page is shown; call browser_open")
    return s.page


async def _settle(page: Page, a: ActionCtx) -> bool:
    """Wait for the load event, briefly: a page with a slow image is still worth reading."""
    try:
        await page.wait_for_load_state("load", timeout=min(a.ms(), SETTLE_SECONDS * 1000))
    except PlaywrightTimeout:
        return False
    return True


def _check_navigation(a: ActionCtx) -> None:
    blocked = a.trace.navigation_block()
    if blocked is not None:
        raise PolicyDenied(f"navigation to {blocked['url']} was blocked: {blocked['reason']}")


async def _locate(page: Page, selector: str | None, text: str | None) -> tuple[Locator, int]:
    if selector is not None:
        try:
            locator = page.locator(selector)
            count = await locator.count()
        except PlaywrightError as exc:
            raise ToolError(f"invalid selector {selector!r}: {first_line(exc)}") from exc
        what = f"selector {selector!r}"
    else:
        locator = page.get_by_text(text or "")
        count = await locator.count()
        what = f"text {text!r}"
    if count == 0:
        raise ToolError(f"no element on {page.url} matches {what}")
    return locator, count


async def open_url(s: Session, a: ActionCtx, *, url: str) -> dict[str, Any]:
    page = s.page if s.page_usable() and s.page is not None else await s.new_page()
    response = await page.goto(url, wait_until="domcontentloaded", timeout=a.ms())
    out: dict[str, Any] = {"status": response.status if response is not None else None}
    if not await _settle(page, a):
        out["loading"] = "the page had not finished loading; some parts may be missing"
    return out


async def screenshot(
    s: Session, a: ActionCtx, *, full_page: bool, selector: str | None
) -> dict[str, Any]:
    page = _require_page(s)
    out: dict[str, Any] = {}
    if selector is not None:
        locator, _count = await _locate(page, selector, None)
        png = await locator.first.screenshot(type="png", timeout=a.ms())
    elif full_page:
        height = await page.evaluate("document.documentElement.scrollHeight")
        if isinstance(height, int | float) and height > MAX_SCREENSHOT_HEIGHT:
            width = page.viewport_size["width"] if page.viewport_size else 1280
            clip: FloatRect = {"x": 0, "y": 0, "width": width, "height": MAX_SCREENSHOT_HEIGHT}
            png = await page.screenshot(type="png", full_page=True, clip=clip, timeout=a.ms())
            out["cut"] = f"the page is {int(height)} px tall; only the top 10000 px are shown"
        else:
            png = await page.screenshot(type="png", full_page=True, timeout=a.ms())
    else:
        png = await page.screenshot(type="png", timeout=a.ms())
    out["_png"] = png
    return out


async def click(
    s: Session, a: ActionCtx, *, selector: str | None, text: str | None
) -> dict[str, Any]:
    page = _require_page(s)
    locator, count = await _locate(page, selector, text)
    await locator.first.click(timeout=a.ms())
    await asyncio.sleep(POPUP_GRACE_SECONDS)
    out: dict[str, Any] = {"clicked": selector if selector is not None else f"text={text}"}
    if count > 1:
        out["matches"] = f"{count} elements matched; the first was clicked"
    followed = await _follow_popup(page, a)
    if followed:
        out["popup_followed"] = followed
    _check_navigation(a)
    await _settle(page, a)
    return out


async def _follow_popup(page: Page, a: ActionCtx) -> str | None:
    for popup in a.trace.popups:
        url = popup.get("url") or ""
        if popup.get("reason") is None and url.startswith(("http://", "https://")):
            popup["followed"] = "yes"
            a.trace.emit(f"following the popup in the current page: {url[:200]}\n")
            await page.goto(url, wait_until="domcontentloaded", timeout=a.ms())
            return url
    return None


async def type_text(
    s: Session, a: ActionCtx, *, selector: str, text: str, submit: bool
) -> dict[str, Any]:
    page = _require_page(s)
    locator, _count = await _locate(page, selector, None)
    await locator.first.fill(text, timeout=a.ms())
    out: dict[str, Any] = {"typed_chars": len(text), "submitted": submit}
    if submit:
        await locator.first.press("Enter", timeout=a.ms())
        await asyncio.sleep(POPUP_GRACE_SECONDS)
        _check_navigation(a)
        await _settle(page, a)
    return out


async def wait(
    s: Session, a: ActionCtx, *, selector: str | None, state: str, milliseconds: int | None
) -> dict[str, Any]:
    page = _require_page(s)
    if milliseconds is not None:
        waited = min(float(milliseconds), max(0.0, a.ms() - 200))
        await asyncio.sleep(waited / 1000)
        out: dict[str, Any] = {"waited_ms": int(waited)}
        if waited < milliseconds:
            out["capped"] = f"waited only {int(waited)} ms: the call's timeout is {a.timeout:g} s"
        return out
    started = time.monotonic()
    await page.locator(selector or "").first.wait_for(state=state, timeout=a.ms())  # type: ignore[arg-type]
    return {
        "selector": selector,
        "state": state,
        "waited_ms": int((time.monotonic() - started) * 1000),
    }


async def extract(s: Session, a: ActionCtx, *, kind: str, selector: str | None) -> dict[str, Any]:
    page = _require_page(s)
    limit = a.settings.max_extract_chars
    scope, _count = await _locate(page, selector, None) if selector else (page.locator("body"), 1)
    if kind == "links":
        links: list[dict[str, str]] = await scope.evaluate_all(_LINKS_JS, MAX_LINKS)
        kept, used = [], 0
        for link in links:
            used += len(link["text"]) + len(link["url"])
            if used > limit:
                break
            kept.append(link)
        out: dict[str, Any] = {"kind": "links", "links": kept, "count": len(kept)}
        if len(kept) < len(links) or len(links) >= MAX_LINKS:
            out["truncated"] = True
            out["notice"] = f"only the first {len(kept)} links are shown; narrow with a selector"
        return out
    texts = await scope.all_inner_texts()
    text = "\n\n".join(t.strip() for t in texts if t.strip())
    out = {"kind": "text", "chars": len(text), "truncated": len(text) > limit}
    if len(text) > limit:
        text = text[:limit] + (
            f"\n\n[truncated: showing the first {limit} of {len(text)} characters; "
            "use a selector to read one part]"
        )
    out["text"] = text
    return out


async def back(s: Session, a: ActionCtx) -> dict[str, Any]:
    page = _require_page(s)
    before = page.url
    response = await page.go_back(wait_until="domcontentloaded", timeout=a.ms())
    if page.url == "about:blank":  # the empty page every tab starts with: not a page to read
        await page.go_forward(wait_until="domcontentloaded", timeout=a.ms())
    if page.url in (before, "about:blank") and response is None:
        return {"went_back": False, "notice": "there is no previous page"}
    _check_navigation(a)
    await _settle(page, a)
    return {"went_back": True}


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def translate(
    exc: PlaywrightError, action: Action, a: ActionCtx, refused: tuple[str, str] | None
) -> ToolError:
    """A failed Playwright call as the model should read it."""
    message = first_line(exc)
    if isinstance(exc, PlaywrightTimeout):
        err: ToolError = ToolTimeout(a.timeout)
        err.data = {"detail": message}
        return err
    blocked = a.trace.navigation_block()
    if "ERR_BLOCKED_BY_CLIENT" in message and blocked is not None:
        return PolicyDenied(f"navigation to {blocked['url']} was blocked: {blocked['reason']}")
    if refused is not None:
        url, reason = refused
        return PolicyDenied(
            f"navigation to {url} was blocked by the browser's network guard: {reason}"
        )
    if "Download is starting" in message:
        return ToolError("the URL starts a file download; downloads are refused")
    return ToolError(f"{action.name} failed: {message}")
