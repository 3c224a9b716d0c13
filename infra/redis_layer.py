"""channels_redis's layer, with a ``group_send`` that costs two Redis round trips instead of four
and a receive that costs one instead of four while messages are waiting.

Every tool-call card and output chunk is a ``group_send``. channels_redis sends four commands
one after another for it: drop the group's expired members, read the members, drop the
members' expired messages, then a script that adds the message to each member within its
capacity. With one Redis host (ours), the first two go in one pipeline and the last two in one
script, with the same effect: members older than ``group_expiry`` are dropped, messages older
than ``expiry`` are dropped, a member at capacity is skipped (and counted in the log line).
With several hosts the layer does exactly what channels_redis does.

Receiving is the web process's hot loop: every event of every open chat reaches it through one
channel per process, read one message at a time. channels_redis spends four round trips on each:
a script that puts back what an interrupted receive left in the channel's in-flight backup, a
blocking pop, adding the popped message to the backup (so a receive cancelled meanwhile loses
nothing), then a task that takes it out of the backup again. Here one script does all of that
for a waiting message: it drops the message handed out last time from the backup (it has been
delivered), puts back anything else left there, pops the next message and records it in the
backup. Only when the channel is empty does the receive fall back to the blocking pop (and one
more trip to back the message up), as channels_redis does. Delivery stays at least once: a
receive cancelled between the pop and its reply leaves the message in the backup, and the next
receive puts it back in the queue.

Fenced: what it overrides is private to channels_redis, so the version is pinned exactly
(``channels-redis==4.3.0`` in pyproject.toml) and tests/unit/test_upstream_contracts.py fails
when the methods it replaces change. Measured gain (``bench concurrency``, distributed, 50
turns at once): a person's own message came back to the page after 0.45 s instead of 1.3 s
(median); two Redis round trips per ``group_send`` (every card) instead of four.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from channels_redis.core import RedisChannelLayer

logger = logging.getLogger(__name__)

# KEYS: the members' message keys. ARGV: one message per key, then one capacity per key, then
# the time now, the expiry (seconds) and the cut-off below which messages have expired.
GROUP_SEND_LUA = """
local n = #KEYS
local now = ARGV[2 * n + 1]
local expiry = ARGV[2 * n + 2]
local cutoff = ARGV[2 * n + 3]
local over_capacity = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, cutoff)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + n]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over_capacity = over_capacity + 1
    end
end
return over_capacity
"""


# KEYS: the channel's queue and its in-flight backup. ARGV: the message handed out last time
# from this channel ('' if none), which has been delivered. Returns the next message or nil.
RECEIVE_LUA = """
if ARGV[1] ~= '' then
    redis.call('ZREM', KEYS[2], ARGV[1])
end
local backed_up = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = #backed_up, 1, -2 do
    redis.call('ZADD', KEYS[1], backed_up[i], backed_up[i - 1])
end
redis.call('DEL', KEYS[2])
local popped = redis.call('ZPOPMIN', KEYS[1])
if popped[1] then
    redis.call('ZADD', KEYS[2], popped[2], popped[1])
    return popped[1]
end
return false
"""


def _script(connection: Any, name: str, source: str) -> Any:
    """A registered script for ``connection`` (one client per event loop): sent as EVALSHA,
    loaded again by redis-py if Redis no longer has it."""
    attribute = f"_cc_{name}"
    script = getattr(connection, attribute, None)
    if script is None:
        script = connection.register_script(source)
        setattr(connection, attribute, script)
    return script


class FewerTripsRedisChannelLayer(RedisChannelLayer):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # channel key -> the message last handed out from it, still in its backup
        self._handed_out: dict[str, bytes] = {}

    async def _brpop_with_clean(self, index: int, channel: str, timeout: int) -> Any:
        if self.ring_size != 1:
            return await super()._brpop_with_clean(index, channel, timeout)
        connection = self.connection(index)
        backup = self._backup_channel_name(channel)
        delivered = self._handed_out.get(channel, b"")
        receive = _script(connection, "receive", RECEIVE_LUA)
        member = await receive(keys=[channel, backup], args=[delivered], client=connection)
        self._handed_out.pop(channel, None)  # the script took it out of the backup
        if member is None:
            result = await connection.bzpopmin(channel, timeout=timeout)
            if result is None:
                return None
            _, member, timestamp = result
            await connection.zadd(backup, {member: float(timestamp)})
        self._handed_out[channel] = member
        return member

    async def _clean_receive_backup(self, index: int, channel: str) -> None:
        if self.ring_size != 1:
            await super()._clean_receive_backup(index, channel)
        # else: the next receive from this channel drops the message from the backup

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if self.ring_size != 1:
            await super().group_send(group, message)
            return
        assert self.require_valid_group_name(group), "Group name not valid"
        key = self._group_key(group)
        connection = self.connection(0)
        async with connection.pipeline(transaction=False) as pipe:
            pipe.zremrangebyscore(key, min=0, max=int(time.time()) - self.group_expiry)
            pipe.zrange(key, 0, -1)
            _, members = await pipe.execute()
        channel_names = [x.decode("utf8") for x in members]
        by_connection, messages, capacities = self._map_channel_keys_to_connection(
            channel_names, message
        )
        keys = by_connection.get(0, [])
        if not keys:
            return
        now = time.time()
        args = [
            *(messages[k] for k in keys),
            *(capacities[k] for k in keys),
            now,
            self.expiry,
            int(now) - int(self.expiry),
        ]
        group_send = _script(connection, "group_send", GROUP_SEND_LUA)
        over_capacity = await group_send(keys=keys, args=args, client=connection)
        if over_capacity > 0:
            logger.info(
                "%s of %s channels over capacity in group %s",
                over_capacity,
                len(channel_names),
                group,
            )
