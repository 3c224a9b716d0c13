"""Events one process publishes leave in the order they were published, whether the caller
waited for them (``publish``), queued them (``wait=False``) or sent them from async code
(``apublish_in_order``, the runner's tokens); and a turn's first event is the person's
message."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from channels.layers import get_channel_layer

from infra.events import apublish_in_order, publish

pytestmark = [pytest.mark.modes]


def test_a_token_never_overtakes_the_message_queued_before_it() -> None:
    async def run() -> list[object]:
        layer = get_channel_layer()
        group = f"order_{uuid.uuid4().hex[:8]}"
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        try:
            for n in range(20):
                # the round's message, queued without waiting (from a database thread) ...
                await asyncio.to_thread(publish, [group], {"type": "message", "n": n}, wait=False)
                # ... and its first token, from the event loop, right after
                await apublish_in_order([group], {"type": "token", "n": n})
            got = []
            for _ in range(40):
                event = await asyncio.wait_for(layer.receive(channel), 5)
                got.append((event["payload"]["type"], event["payload"]["n"]))
            return got
        finally:
            await layer.group_discard(group, channel)

    got = asyncio.run(run())
    assert got == [(kind, n) for n in range(20) for kind in ("message", "token")]


def test_the_persons_message_goes_out_before_the_round_is_queued(
    conversation: Any, user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23 B1: the first round was queued before the person's message was published, and
    the page appends events as they arrive, so a quick round (a refused call's card, the
    answer) could show above the message it answers."""
    from chat_app.services import turns

    order: list[str] = []
    monkeypatch.setattr(
        turns, "message_publish", lambda message, **kw: order.append(f"message {message.role}")
    )
    monkeypatch.setattr(turns, "_queue_round", lambda turn_id: order.append("round queued"))

    turns.turn_start(conversation=conversation, user_id=user.pk, text="what time is it?")

    assert order == ["message user", "round queued"]


def test_embedded_events_go_straight_into_the_layer_from_the_callers_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 38: in embedded mode an event published from a worker's or a database thread is
    put into its receivers' channels by that thread, in the order of the calls, and is there
    when ``publish`` returns; the publishing thread (a hop there, and one back to a caller
    who waits) is not used. Its order with the runner's tokens holds as above."""
    from infra import events
    from infra.layers import ThreadSafeInMemoryChannelLayer

    layer = ThreadSafeInMemoryChannelLayer()
    monkeypatch.setattr(events, "get_channel_layer", lambda: layer)

    def no_publishing_thread(self: object) -> None:
        raise AssertionError("the publishing thread was used")

    monkeypatch.setattr(events._Publisher, "_start", no_publishing_thread)

    async def run() -> tuple[list[object], list[bool]]:
        group = "straight"
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        done = []
        for n in range(5):
            sent = await asyncio.to_thread(publish, [group], {"type": "card", "n": n}, wait=False)
            done.append(sent.done())
            await asyncio.to_thread(publish, [group], {"type": "message", "n": n})
            await apublish_in_order([group], {"type": "token", "n": n})
        got = [
            (event["payload"]["type"], event["payload"]["n"])
            for event in [await asyncio.wait_for(layer.receive(channel), 2) for _ in range(15)]
        ]
        return got, done

    got, done = asyncio.run(run())
    assert got == [(kind, n) for n in range(5) for kind in ("card", "message", "token")]
    assert done == [True] * 5


def test_a_broken_embedded_layer_is_logged_and_does_not_break_the_caller(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from infra import events

    class Broken:
        def group_send_now(self, group: str, message: dict[str, Any]) -> None:
            raise RuntimeError("layer gone")

    monkeypatch.setattr(events, "get_channel_layer", lambda: Broken())
    sent = publish(["g1", "g2"], {"type": "card"})
    assert sent.done()
    assert [r.getMessage() for r in caplog.records] == [
        "could not publish card to g1",
        "could not publish card to g2",
    ]
