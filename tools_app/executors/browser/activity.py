"""The browser activities: thin wrappers that hand one action to this process's pool and
turn its answer into the tool result. Screenshots are stored here, on the calling thread,
because that is where the ORM may be used."""

from __future__ import annotations

from typing import Any

from tools_app.executors.browser.screenshots import (
    screenshot_check_cap,
    screenshot_result,
    screenshot_store,
)
from tools_app.executors.browser.settings import BrowserSettings
from tools_app.executors.browser.tools import (
    BrowserBack,
    BrowserClick,
    BrowserExtract,
    BrowserOpen,
    BrowserScreenshot,
    BrowserType,
    BrowserWait,
)
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def action_timeout(requested: int | None, ctx: ActivityContext[BrowserSettings]) -> float:
    """The call's own timeout, within the admin's maximum (and the call's watchdog)."""
    limit = min(ctx.timeout, float(ctx.settings.timeout_seconds))
    return min(float(requested), limit) if requested else limit


def _run(
    ctx: ActivityContext[BrowserSettings],
    name: str,
    fn: str,
    kwargs: dict[str, Any],
    requested: int | None,
    *,
    restores_page: bool = True,
) -> dict[str, Any]:
    """Run ``actions.<fn>`` in the pool. The actions and the pool are imported here, at the
    first browser call: they load Playwright (~18 MiB), which a server that never drives a
    browser should not carry."""
    from tools_app.executors.browser import actions
    from tools_app.executors.browser.pool import get_pool

    action = actions.Action(name, getattr(actions, fn), kwargs, restores_page)
    settings = ctx.settings
    ctx.check_cancelled()
    return get_pool().run(
        key=ctx.workspace_id,
        settings=settings,
        action=action,
        timeout=action_timeout(requested, ctx),
        cancel=ctx.cancel,
        emit=ctx.emit_output,
    )


@activity("browser_open")
def browser_open(args: BrowserOpen, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    ctx.emit_output(f"open {args.url}\n")
    out = _run(
        ctx, "browser_open", "open_url", {"url": args.url}, args.timeout, restores_page=False
    )
    ctx.emit_output(f"{out.get('status')} {out['url']} “{out['title']}”\n")
    return out


@activity("browser_screenshot")
def browser_screenshot(
    args: BrowserScreenshot, ctx: ActivityContext[BrowserSettings]
) -> dict[str, Any]:
    settings = ctx.settings
    screenshot_check_cap(ctx=ctx, limit=settings.max_screenshots_per_conversation)
    kwargs = {"full_page": args.full_page, "selector": args.selector}
    out = _run(ctx, "browser_screenshot", "screenshot", kwargs, args.timeout)
    shot = screenshot_store(ctx=ctx, png=out.pop("_png"))
    out["screenshot"] = screenshot_result(shot)
    ctx.emit_output(f"screenshot {shot.width}×{shot.height} of {out['url']}\n")
    return out


@activity("browser_click")
def browser_click(args: BrowserClick, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    kwargs = {"selector": args.selector, "text": args.text}
    out = _run(ctx, "browser_click", "click", kwargs, args.timeout)
    ctx.emit_output(f"clicked {out['clicked']} → {out['url']}\n")
    return out


@activity("browser_type")
def browser_type(args: BrowserType, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    kwargs = {"selector": args.selector, "text": args.text, "submit": args.submit}
    out = _run(ctx, "browser_type", "type_text", kwargs, args.timeout)
    ctx.emit_output(f"typed {len(args.text)} characters into {args.selector}\n")
    return out


@activity("browser_wait")
def browser_wait(args: BrowserWait, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    kwargs = {"selector": args.selector, "state": args.state, "milliseconds": args.milliseconds}
    return _run(ctx, "browser_wait", "wait", kwargs, args.timeout)


@activity("browser_extract")
def browser_extract(args: BrowserExtract, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    kwargs = {"kind": args.kind, "selector": args.selector}
    out = _run(ctx, "browser_extract", "extract", kwargs, args.timeout)
    size = f"{out['chars']} characters" if args.kind == "text" else f"{out['count']} links"
    ctx.emit_output(f"extracted {size} from {out['url']}\n")
    return out


@activity("browser_back")
def browser_back(args: BrowserBack, ctx: ActivityContext[BrowserSettings]) -> dict[str, Any]:
    out = _run(ctx, "browser_back", "back", {}, args.timeout)
    ctx.emit_output(f"back → {out['url']}\n")
    return out
