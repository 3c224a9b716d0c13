"""Browser pool: "open a local page + screenshot" through the full pipeline, warm pool
against a browser launched per call.

Both paths run the same two tool calls (``browser_open``, then ``browser_screenshot``)
through binding, Celery (the embedded worker), the watchdog, the activity and the stored,
published result; each sample is the time from dispatching the first call to the
``succeeded`` event of the second.

* ``warm_pool``: the real activities: the worker's pool keeps one Chromium and the
  conversation's context between calls.
* ``cold_launch_per_call``: the activities are swapped (``override_activity``) for ones that
  launch Chromium with Playwright for each call, as a pool-less tool would: open the page,
  (reopen it and take the screenshot), close the browser. The Playwright driver itself is
  started once beforehand, so only the browser launch is charged to the cold path.

Samples alternate warm and cold so drift on a busy machine hits both. Target:
``warm_vs_cold_ratio`` (warm median / cold median) ≤ 0.3.
"""

from __future__ import annotations

import asyncio
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bench.common import ROOT, emit, stats_ms

N_SAMPLES = 30
WARM_UP = 3
TARGET = 0.3
PAGE = (
    b"<!doctype html><html><head><title>Bench page</title></head><body>"
    b"<h1>Bench page</h1>"
    + b"<p>Some text for the screenshot to draw.</p>" * 40
    + b"</body></html>"
)


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)


class _ColdBrowser:
    """A Playwright driver on its own loop thread; every call launches a fresh Chromium."""

    def __init__(self) -> None:
        from playwright.async_api import async_playwright

        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.playwright = self.run(async_playwright().start())

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(120)

    async def work(self, url: str, settings: Any, screenshot: bool) -> dict[str, Any]:
        from tools_app.executors.browser.chromium import LAUNCH_ARGS, resolve_executable

        executable = resolve_executable(bundled=self.playwright.chromium.executable_path)
        browser = await self.playwright.chromium.launch(
            executable_path=executable.path, args=LAUNCH_ARGS
        )
        try:
            context = await browser.new_context(
                viewport={"width": settings.viewport_width, "height": settings.viewport_height},
                service_workers="block",
                accept_downloads=False,
            )
            page = await context.new_page()
            response = await page.goto(url, wait_until="load")
            out: dict[str, Any] = {
                "url": page.url,
                "title": await page.title(),
                "status": response.status if response else None,
            }
            if screenshot:
                out["_png"] = await page.screenshot(type="png")
            return out
        finally:
            await browser.close()


def _cold_activities(cold: _ColdBrowser, url: str) -> dict[str, Any]:
    from tools_app.executors.browser.screenshots import screenshot_result, screenshot_store

    def cold_open(args: Any, ctx: Any) -> dict[str, Any]:
        return cold.run(cold.work(args.url, ctx.settings, screenshot=False))

    def cold_screenshot(args: Any, ctx: Any) -> dict[str, Any]:
        out = cold.run(cold.work(url, ctx.settings, screenshot=True))
        out["screenshot"] = screenshot_result(screenshot_store(ctx=ctx, png=out.pop("_png")))
        return out

    return {"browser_open": cold_open, "browser_screenshot": cold_screenshot}


async def _run_call(layer: Any, user_id: int, conversation_id: int, tool: str, args: dict) -> None:
    from asgiref.sync import sync_to_async

    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch

    call = await sync_to_async(toolcall_bind)(
        request=CallRequest(tool=tool, arguments=args),
        ctx=BindContext(user_id=user_id, conversation_id=conversation_id, source="api"),
    )
    assert call.status == "queued", call.result
    from tools_app.events import toolcall_groups

    group = toolcall_groups(call)[0]  # where the call's card is published
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    try:
        await sync_to_async(toolcall_dispatch)(call)
        while True:
            message = await layer.receive(channel)
            if message["payload"].get("id") != call.pk:
                continue
            status = message["payload"].get("status")
            if status == "succeeded":
                return
            if status in ("failed", "denied", "cancelled"):
                raise RuntimeError(f"{tool} {status}: {message['payload']}")
    finally:
        await layer.group_discard(group, channel)


def _sample(user_id: int, conversation_id: int, url: str) -> float:
    from channels.layers import get_channel_layer

    async def pair() -> float:
        layer = get_channel_layer()
        started = time.perf_counter()
        await _run_call(layer, user_id, conversation_id, "browser_open", {"url": url})
        await _run_call(layer, user_id, conversation_id, "browser_screenshot", {})
        return time.perf_counter() - started

    return asyncio.run(pair())


def _setup_django() -> None:
    """Embedded mode with a state directory of its own (its screenshots stay out of the
    other benches' way), migrated like ``bench.common.setup_django`` does."""
    import os
    import sys

    for key in ("REDIS_URL", "DATABASE_URL"):
        os.environ.pop(key, None)
    os.environ.update(CC_VAR_DIR=str(ROOT / "var" / "bench-browser"), PYTHONUNBUFFERED="1")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlcenter.settings")
    sys.path.insert(0, str(ROOT))
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)


def measure() -> dict[str, Any]:
    _setup_django()
    from django.contrib.auth import get_user_model

    from chat_app.embedded import start_embedded_worker
    from chat_app.models import Conversation
    from tools_app.executors.browser.pool import get_pool
    from tools_app.models import ToolGroupConfig
    from tools_app.registry import override_activity

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    ToolGroupConfig.objects.update_or_create(
        name="browser",
        defaults={
            "settings": {
                "allowed_domains": ["127.0.0.1"],
                "private_allowed": ["127.0.0.1"],
                "max_screenshots_per_conversation": 1000,
            }
        },
    )
    User = get_user_model()
    User.objects.filter(username="bench-browser").delete()
    user = User.objects.create_user("bench-browser")
    # A member may use only what is granted (issue 22): the browser tools granted to everyone,
    # as an admin would.
    from tools_app.models import ToolGrant
    from tools_app.services.grants import everyone_group

    ToolGrant.objects.get_or_create(group=everyone_group(), kind="group", name="browser")
    warm_conv = Conversation.objects.create(owner=user, title="bench warm")
    cold_conv = Conversation.objects.create(owner=user, title="bench cold")
    start_embedded_worker()
    cold = _ColdBrowser()
    cold_fns = _cold_activities(cold, url)

    def cold_sample() -> float:
        with (
            override_activity("browser_open", cold_fns["browser_open"]),
            override_activity("browser_screenshot", cold_fns["browser_screenshot"]),
        ):
            return _sample(user.pk, cold_conv.pk, url)

    for _ in range(WARM_UP):  # the first warm sample launches the pool's Chromium
        _sample(user.pk, warm_conv.pk, url)
        cold_sample()
    warm: list[float] = []
    cold_samples: list[float] = []
    for _ in range(N_SAMPLES):
        warm.append(_sample(user.pk, warm_conv.pk, url))
        cold_samples.append(cold_sample())
    warm_stats, cold_stats = stats_ms(warm), stats_ms(cold_samples)
    ratio = warm_stats["median_ms"] / cold_stats["median_ms"]
    pool_stats = get_pool().stats()
    server.shutdown()
    return {
        "mode": "embedded",
        "work": "browser_open + browser_screenshot of a local page, dispatch to succeeded",
        "warm_pool": warm_stats,
        "cold_launch_per_call": cold_stats,
        "warm_vs_cold_ratio": round(ratio, 3),
        "warm_vs_cold_ratio_p95": round(warm_stats["p95_ms"] / cold_stats["p95_ms"], 3),
        "target_ratio": TARGET,
        "meets_target": ratio <= TARGET,
        "chromium": pool_stats["version"],
        "pool_launches": pool_stats["launches"],
    }


def main() -> None:
    emit(measure())


if __name__ == "__main__":
    main()
