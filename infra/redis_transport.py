"""kombu's Redis transport, with one Redis client per channel instead of one per command.

kombu's Redis channel builds a new ``redis.Redis`` around its connection pool for every
command it sends outside the consumer loop: each publish, and the worker's bookkeeping of each
message it takes (the unacked index when it arrives, again when it is acknowledged). A
``redis.Redis`` built that way owns nothing but a reference to the pool, and is safe to share
between threads, yet redis-py 8 takes longer to build one (about 0.16 ms, its table of ~300
response callbacks) than Redis takes to answer the command. Here each channel keeps the one it
built while its pool stays the same; a new pool (after a reconnect) gets a new client.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _cc_client: tuple[Any, Any] | None = None  # (pool, client built around it)

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        pool = self.pool
        cached = self._cc_client
        if cached is None or cached[0] is not pool:
            cached = (pool, self._create_client())
            self._cc_client = cached
        yield cached[1]


class Transport(kombu_redis.Transport):
    Channel = Channel
