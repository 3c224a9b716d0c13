"""The embedded channel layer forgets a channel whose receive was cancelled (a websocket
closed) and that holds nothing: one entry per closed websocket was left behind."""

from __future__ import annotations

import asyncio

from infra.layers import ThreadSafeInMemoryChannelLayer, _Channel


async def _waiting_receive() -> tuple[
    ThreadSafeInMemoryChannelLayer, str, asyncio.Future[dict[str, object]]
]:
    """A layer, a new channel and a receive waiting on it (a socket's)."""
    layer = ThreadSafeInMemoryChannelLayer()
    name = await layer.new_channel()
    waiting = asyncio.ensure_future(layer.receive(name))
    await asyncio.sleep(0.01)
    return layer, name, waiting


def test_it_forgets_a_closed_sockets_channel() -> None:
    async def run() -> dict[str, object]:
        layer, name, waiting = await _waiting_receive()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        return dict(layer._channels)

    assert asyncio.run(run()) == {}


def test_it_keeps_a_channel_with_messages_waiting() -> None:
    async def run() -> int:
        layer, name, waiting = await _waiting_receive()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        await layer.send(name, {"type": "x"})
        return len(layer._channels)

    assert asyncio.run(run()) == 1


def test_a_message_sent_on_the_receivers_loop_wakes_it_without_the_self_pipe() -> None:
    """Events published on the server's loop reach a socket there: its waiter is woken at
    once, not through ``call_soon_threadsafe`` (a self-pipe write and a wake-up per event)."""

    async def run() -> tuple[dict[str, object], int]:
        layer, name, waiting = await _waiting_receive()
        loop = asyncio.get_running_loop()
        calls = []
        threadsafe = loop.call_soon_threadsafe
        loop.call_soon_threadsafe = lambda *a, **k: calls.append(a) or threadsafe(*a, **k)  # type: ignore[method-assign]
        await layer.send(name, {"type": "x", "n": 1})
        return await asyncio.wait_for(waiting, 2), len(calls)

    assert asyncio.run(run()) == ({"type": "x", "n": 1}, 0)


def test_a_message_sent_from_another_thread_wakes_the_receiver_on_its_loop() -> None:
    async def run() -> dict[str, object]:
        layer, name, waiting = await _waiting_receive()
        await asyncio.to_thread(asyncio.run, layer.send(name, {"type": "y"}))
        return await asyncio.wait_for(waiting, 2)

    assert asyncio.run(run()) == {"type": "y"}


def test_a_receiver_on_a_closed_loop_does_not_cost_the_others_the_event() -> None:
    """A socket's loop that is gone (a test's, a stopped thread's) left its waiter behind:
    waking it raises, and the members after it in the group missed the event."""
    layer = ThreadSafeInMemoryChannelLayer()
    gone = asyncio.new_event_loop()

    async def wait_on_the_gone_loop() -> None:
        name = await layer.new_channel()
        await layer.group_add("g", name)
        # what a receive leaves waiting on its channel (without a task to outlive the loop)
        layer._channels.setdefault(name, _Channel()).waiters.append((gone, gone.create_future()))

    gone.run_until_complete(wait_on_the_gone_loop())
    gone.close()

    async def run() -> dict[str, object]:
        name = await layer.new_channel()
        await layer.group_add("g", name)
        waiting = asyncio.ensure_future(layer.receive(name))
        await asyncio.sleep(0.01)
        await asyncio.to_thread(layer.group_send_now, "g", {"type": "x"})
        return await asyncio.wait_for(waiting, 2)

    assert asyncio.run(run()) == {"type": "x"}
