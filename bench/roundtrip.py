"""Tool-call round trips, per mode.

* ``celery_roundtrip``: a bound ``current_time`` call dispatched to Celery until its
  ``succeeded`` event arrives on the channel layer (dispatch + worker + activity + DB + publish).
  Embedded: in-process worker on ``memory://``; distributed: a ``celery worker`` process on Redis.
* ``result_to_card``: from the moment a call's result is stored (``finished_at``) to the moment
  the browser applied the card update (a real Chromium page on the real server).
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from bench.common import (
    emit,
    run_each_mode,
    setup_django,
    start_server,
    start_worker,
    stats_ms,
    stop,
)

N_CALLS = 200
N_CARDS = 30


async def _one_call(layer: Any, user_id: int) -> float:
    from asgiref.sync import sync_to_async

    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind, toolcall_dispatch

    call = await sync_to_async(toolcall_bind)(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(user_id=user_id, conversation_id=None, source="api"),
    )
    channel = await layer.new_channel()
    await layer.group_add(f"toolcall_{call.pk}", channel)
    started = time.perf_counter()
    await sync_to_async(toolcall_dispatch)(call)
    while True:
        message = await layer.receive(channel)
        if message["payload"].get("status") == "succeeded":
            elapsed = time.perf_counter() - started
            await layer.group_discard(f"toolcall_{call.pk}", channel)
            return elapsed


def celery_roundtrip(mode: str, user_id: int) -> dict[str, Any]:
    from channels.layers import get_channel_layer

    async def run() -> list[float]:
        layer = get_channel_layer()
        for _ in range(10):  # warm-up
            await _one_call(layer, user_id)
        return [await _one_call(layer, user_id) for _ in range(N_CALLS)]

    return stats_ms(asyncio.run(run()))


def result_to_card(mode: str, port: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM_ARGS, chromium_executable

    samples: list[float] = []
    executable = chromium_executable()  # outside: finding it may start Playwright itself
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page(base_url=f"http://127.0.0.1:{port}")
        page.goto("/accounts/login/")
        page.get_by_label("Username").fill("bench")
        page.get_by_label("Password").fill("bench-password-1")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_function("document.getElementById('chat')?.dataset.connected === 'true'")
        for i in range(N_CARDS + 3):
            page.get_by_label("Message").fill('/current_time {"timezone": "UTC"}')
            page.keyboard.press("Enter")
            card = page.locator(".toolcall").nth(i)
            try:
                card.locator(".status-word", has_text="succeeded").wait_for()
            except Exception:
                page.screenshot(path="/tmp/shots/bench-fail.png")
                print(
                    page.locator("#composer-error").inner_text(),
                    page.locator(".toolcall").count(),
                    file=sys.stderr,
                )
                raise
            page.wait_for_function("document.getElementById('chat').dataset.running === 'false'")
            applied = int(card.get_attribute("data-applied-at") or 0)
            finished = int(card.get_attribute("data-finished-at") or 0)
            if i >= 3:  # warm-up
                samples.append((applied - finished) / 1000)
        browser.close()
    return stats_ms(samples)


def measure(mode: str) -> dict[str, Any]:
    setup_django(mode)
    from django.contrib.auth import get_user_model

    from chat_app.models import Conversation

    User = get_user_model()
    User.objects.filter(username="bench").delete()
    user = User.objects.create_user("bench", password="bench-password-1")
    Conversation.objects.create(owner=user, title="bench")
    worker = None
    if mode == "distributed":
        worker = start_worker(mode)
    else:
        from chat_app.embedded import start_embedded_worker

        start_embedded_worker()
    port = 18000 + (1 if mode == "distributed" else 0)
    try:
        calls = celery_roundtrip(mode, user.pk)
    finally:
        if worker is not None:
            stop(worker)
    # The card measurement needs the real server (and, distributed, its own worker).
    worker = start_worker(mode) if mode == "distributed" else None
    server = start_server(mode, port)
    try:
        cards = result_to_card(mode, port)
    finally:
        stop(server)
        if worker is not None:
            stop(worker)
    return {"celery_roundtrip_current_time": calls, "result_to_card_update": cards}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("embedded", "distributed"):
        emit(measure(sys.argv[1]))
        return
    out: dict[str, Any] = run_each_mode("roundtrip")
    emit(out)


if __name__ == "__main__":
    main()
