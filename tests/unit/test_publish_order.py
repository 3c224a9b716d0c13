"""Events one process publishes leave in the order they were published, whether the caller
waited for them (``publish``), queued them (``wait=False``) or sent them from async code
(``apublish_in_order``, the runner's tokens)."""

from __future__ import annotations

import asyncio
import uuid

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
