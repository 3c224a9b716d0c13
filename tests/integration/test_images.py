"""Screenshots reach a model with image input only when the admin allows it; otherwise the
model reads the path and size (no base64 in the prompt)."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest

from chat_app.models import Provider, Turn
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply
from tools_app.executors.browser.screenshots import screenshot_result, screenshot_store
from tools_app.models import ToolGroupConfig
from tools_app.registry import override_activity


def tiny_png() -> bytes:
    raw = b"\x00\xff\x00\x00"  # one red pixel, filter byte first
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


PNG = tiny_png()
B64 = base64.b64encode(PNG).decode()


def fake_screenshot(args, ctx):  # a test double for the activity; the schema is untouched
    shot = screenshot_store(ctx=ctx, png=PNG)
    return {
        "url": "https://example.com/",
        "title": "Example",
        "screenshot": screenshot_result(shot),
    }


def run_turn(conversation, user, llm):
    llm.script(Reply(calls=[Call("browser_screenshot", {})]), Reply(text="A red pixel."))
    with override_activity("browser_screenshot", fake_screenshot):
        turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="look").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    return llm.requests[1]


def test_by_default_the_model_gets_a_path_not_the_image(worker, conversation, user, llm, provider):
    body = run_turn(conversation, user, llm)
    text = str(body)
    assert B64 not in text
    assert "screenshots/c" in text and '"width": 1' in text


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_image_model_gets_the_screenshot_when_allowed(
    worker, conversation, user, llm, provider, kind
):
    provider.kind = kind
    provider.base_url = llm.openai_base_url if kind == "openai" else llm.anthropic_base_url
    provider.image_input = True
    provider.save()
    ToolGroupConfig.objects.create(name="browser", settings={"send_images_to_model": True})
    body = run_turn(conversation, user, llm)
    messages = body["messages"]
    if kind == "openai":
        tool_index = next(i for i, m in enumerate(messages) if m["role"] == "tool")
        follow = messages[tool_index + 1]  # images come right after the tool results
        assert follow["role"] == "user"
        urls = [p["image_url"]["url"] for p in follow["content"] if p["type"] == "image_url"]
        assert urls == [f"data:image/png;base64,{B64}"]
    else:
        results = [
            b
            for m in messages
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        images = [b for r in results for b in r["content"] if b.get("type") == "image"]
        assert images[0]["source"] == {"type": "base64", "media_type": "image/png", "data": B64}


def test_a_text_only_provider_never_gets_images(worker, conversation, user, llm, provider):
    ToolGroupConfig.objects.create(name="browser", settings={"send_images_to_model": True})
    assert Provider.objects.get(pk=provider.pk).image_input is False
    assert B64 not in str(run_turn(conversation, user, llm))
