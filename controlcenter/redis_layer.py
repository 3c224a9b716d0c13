"""channels_redis's layer, with a ``group_send`` that costs two Redis round trips instead of four.

Every tool-call card and output chunk is a ``group_send``. channels_redis sends four commands
one after another for it: drop the group's expired members, read the members, drop the
members' expired messages, then a script that adds the message to each member within its
capacity. With one Redis host (ours), the first two go in one pipeline and the last two in one
script, with the same effect: members older than ``group_expiry`` are dropped, messages older
than ``expiry`` are dropped, a member at capacity is skipped (and counted in the log line).
With several hosts the layer does exactly what channels_redis does.
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


def _script(connection: Any) -> Any:
    """The group-send script for ``connection`` (one client per event loop): sent as EVALSHA,
    loaded again by redis-py if Redis no longer has it."""
    script = getattr(connection, "_cc_group_send", None)
    if script is None:
        script = connection.register_script(GROUP_SEND_LUA)
        connection._cc_group_send = script
    return script


class FewerTripsRedisChannelLayer(RedisChannelLayer):
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
        over_capacity = await _script(connection)(keys=keys, args=args, client=connection)
        if over_capacity > 0:
            logger.info(
                "%s of %s channels over capacity in group %s",
                over_capacity,
                len(channel_names),
                group,
            )
