"""The two-round-trip ``group_send`` delivers what channels_redis's own one does."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from infra.redis_layer import FewerTripsRedisChannelLayer

pytestmark = pytest.mark.distributed_only


def _layer(cls: type[RedisChannelLayer], prefix: str, **config: Any) -> RedisChannelLayer:
    return cls(hosts=[settings.REDIS_URL], prefix=prefix, **config)


async def _scenario(cls: type[RedisChannelLayer]) -> dict[str, Any]:
    prefix = f"cc-test-{uuid.uuid4().hex[:8]}"
    layer = _layer(cls, prefix, capacity=2, expiry=60)
    other = _layer(cls, prefix, capacity=2, expiry=60)  # another process's channels
    try:
        a, b = await layer.new_channel(), await layer.new_channel()  # one process: one key
        c = await other.new_channel()
        gone = "specific.gone!x"
        for channel in (a, b, c):
            await layer.group_add("g", channel)
        # A member older than the group expiry is dropped rather than sent to.
        conn = layer.connection(0)
        await conn.zadd(layer._group_key("g"), {gone: int(time.time()) - 2 * layer.group_expiry})
        # c's key already holds an expired message (dropped first) and one live one.
        key_c = layer.prefix + layer.non_local_name(c)
        await conn.zadd(key_c, {b"stale": time.time() - 3600, b"live": time.time()})
        for n in range(3):  # a and b take two each (their key's capacity), c one more
            await layer.group_send("g", {"type": "t", "n": n})
        got_a = [await asyncio.wait_for(layer.receive(a), 2) for _ in range(2)]
        got_b = [await asyncio.wait_for(layer.receive(b), 2) for _ in range(2)]
        members = await conn.zrange(layer._group_key("g"), 0, -1)
        left_c = await conn.zrange(key_c, 0, -1)
        gone_key = await conn.exists(layer.prefix + "specific.gone!")
        return {
            "a": [m["n"] for m in got_a],
            "b": [m["n"] for m in got_b],
            "members": sorted(m.decode() for m in members) == sorted([a, b, c]),
            "c_count": len(left_c),
            "c_has_stale": b"stale" in left_c,
            "gone_key": gone_key,
        }
    finally:
        await layer.flush()
        await other.flush()


def test_group_send_matches_channels_redis() -> None:
    ours = asyncio.run(_scenario(FewerTripsRedisChannelLayer))
    theirs = asyncio.run(_scenario(RedisChannelLayer))
    assert ours == theirs
    assert ours["a"] == [0, 1] and ours["b"] == [0, 1]
    assert ours["c_count"] == 2 and not ours["c_has_stale"]
    assert ours["members"] and not ours["gone_key"]


def test_group_send_uses_two_round_trips() -> None:
    async def run() -> int:
        layer = _layer(FewerTripsRedisChannelLayer, f"cc-test-{uuid.uuid4().hex[:8]}")
        try:
            channel = await layer.new_channel()
            await layer.group_add("g", channel)
            await layer.group_send("g", {"type": "warm"})  # loads the script once
            conn = layer.connection(0)
            sent = 0
            original = conn.execute_command
            original_pipe = type(conn.pipeline()).execute

            async def counting(*args: Any, **kwargs: Any) -> Any:
                nonlocal sent
                sent += 1
                return await original(*args, **kwargs)

            async def counting_pipe(self: Any, *args: Any, **kwargs: Any) -> Any:
                nonlocal sent
                sent += 1
                return await original_pipe(self, *args, **kwargs)

            conn.execute_command = counting  # type: ignore[method-assign]
            pipe_cls = type(conn.pipeline())
            pipe_cls.execute = counting_pipe  # type: ignore[method-assign]
            try:
                await layer.group_send("g", {"type": "t"})
            finally:
                del conn.execute_command
                pipe_cls.execute = original_pipe  # type: ignore[method-assign]
            assert (await layer.receive(channel))["type"] == "warm"
            assert (await layer.receive(channel))["type"] == "t"
            return sent
        finally:
            await layer.flush()

    assert asyncio.run(run()) == 2


def _counting_commands(conn: Any) -> tuple[list[str], Any]:
    """Count the commands ``conn`` sends (each one a round trip); returns (log, undo)."""
    sent: list[str] = []
    original = conn.execute_command

    async def counting(*args: Any, **kwargs: Any) -> Any:
        sent.append(str(args[0]))
        return await original(*args, **kwargs)

    conn.execute_command = counting

    def undo() -> None:
        del conn.execute_command

    return sent, undo


def test_receive_takes_one_round_trip_per_waiting_message_and_keeps_order() -> None:
    async def run() -> tuple[list[int], list[str]]:
        layer = _layer(FewerTripsRedisChannelLayer, f"cc-test-{uuid.uuid4().hex[:8]}")
        try:
            channel = await layer.new_channel()
            await layer.group_add("g", channel)
            for n in range(4):
                await layer.group_send("g", {"type": "t", "n": n})
            got = [(await layer.receive(channel))["n"]]  # loads the script once
            sent, undo = _counting_commands(layer.connection(0))
            try:
                got += [(await layer.receive(channel))["n"] for _ in range(3)]
            finally:
                undo()
            return got, sent
        finally:
            await layer.flush()

    got, sent = asyncio.run(run())
    assert got == [0, 1, 2, 3]
    assert sent == ["EVALSHA"] * 3  # channels_redis: EVAL, BZPOPMIN, ZADD, ZPOPMIN each


def test_receive_waits_for_a_message_that_arrives_later() -> None:
    async def run() -> list[Any]:
        layer = _layer(FewerTripsRedisChannelLayer, f"cc-test-{uuid.uuid4().hex[:8]}")
        try:
            channel = await layer.new_channel()
            waiting = asyncio.ensure_future(layer.receive(channel))
            await asyncio.sleep(0.3)  # the channel is empty: the receive blocks in Redis
            assert not waiting.done()
            await layer.send(channel, {"type": "t", "n": 1})
            first = await asyncio.wait_for(waiting, 5)
            await layer.send(channel, {"type": "t", "n": 2})
            second = await asyncio.wait_for(layer.receive(channel), 5)
            backup = await layer.connection(0).zcard(
                layer._backup_channel_name(layer.prefix + layer.non_local_name(channel))
            )
            return [first["n"], second["n"], backup]
        finally:
            await layer.flush()

    # the backup holds only the message handed out last (dropped by the next receive)
    assert asyncio.run(run()) == [1, 2, 1]


def test_an_interrupted_receive_loses_nothing_and_a_delivered_message_is_not_repeated() -> None:
    async def run() -> list[int]:
        layer = _layer(FewerTripsRedisChannelLayer, f"cc-test-{uuid.uuid4().hex[:8]}")
        try:
            channel = await layer.new_channel()
            for n in range(3):
                await layer.send(channel, {"type": "t", "n": n})
            got = [(await layer.receive(channel))["n"]]
            # A receive whose reply never arrived (cancelled, connection lost): the script
            # popped message 1 into the backup, but no one was handed it.
            conn = layer.connection(0)
            key = layer.prefix + layer.non_local_name(channel)
            backup = layer._backup_channel_name(key)
            lost = await conn.eval(
                "local p = redis.call('ZPOPMIN', KEYS[1]) "
                "redis.call('ZADD', KEYS[2], p[2], p[1]) return p[1]",
                2,
                key,
                backup,
            )
            assert lost is not None
            got += [(await layer.receive(channel))["n"] for _ in range(2)]
            return got
        finally:
            await layer.flush()

    assert asyncio.run(run()) == [0, 1, 2]


def test_the_first_commands_after_a_redis_restart_reach_the_new_server() -> None:
    """The pool's connections outlive a Redis restart: the first command on each finds its
    socket closed. It is sent again on a new connection (the settings' retry), so the group a
    page joins after the restart and the event sent to it are not lost to a stale socket."""
    from tests.stack import RedisServer

    server = RedisServer()
    server.start()
    host = {**settings.CHANNEL_LAYERS["default"]["CONFIG"]["hosts"][0], "address": server.url}

    async def run() -> list[Any]:
        layer = FewerTripsRedisChannelLayer(hosts=[host], prefix="cc-test-restart")
        try:
            before = await layer.new_channel()
            await layer.group_add("g", before)
            await layer.group_send("g", {"type": "t", "n": 1})
            got = [(await asyncio.wait_for(layer.receive(before), 5))["n"]]
            # Several pooled connections at once, each of them stale after the restart.
            await asyncio.gather(*(layer.connection(0).ping() for _ in range(4)))
            await asyncio.to_thread(server.restart)
            after = await layer.new_channel()
            await layer.group_add("g", after)
            await layer.group_send("g", {"type": "t", "n": 2})
            got.append((await asyncio.wait_for(layer.receive(after), 5))["n"])
            got.append(await asyncio.gather(*(layer.connection(0).ping() for _ in range(4))))
            return got
        finally:
            await layer.flush()

    try:
        assert asyncio.run(run()) == [1, 2, [True] * 4]
    finally:
        server.stop()
