"""The embedded channel layer forgets a channel whose receive was cancelled (a websocket
closed) and that holds nothing: one entry per closed websocket was left behind."""

from __future__ import annotations

import asyncio

from infra.layers import ThreadSafeInMemoryChannelLayer


def test_it_forgets_a_closed_sockets_channel() -> None:
    async def run() -> dict[str, object]:
        layer = ThreadSafeInMemoryChannelLayer()
        name = await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(name))
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return dict(layer._channels)

    assert asyncio.run(run()) == {}


def test_it_keeps_a_channel_with_messages_waiting() -> None:
    async def run() -> int:
        layer = ThreadSafeInMemoryChannelLayer()
        name = await layer.new_channel()
        waiting = asyncio.ensure_future(layer.receive(name))
        await asyncio.sleep(0.01)
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        await layer.send(name, {"type": "x"})
        return len(layer._channels)

    assert asyncio.run(run()) == 1
