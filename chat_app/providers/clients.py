"""Long-lived SDK clients for one event loop.

The agent runner streams hundreds of replies at once from one asyncio loop. Opening an SDK
client per reply would build an HTTP client (and an SSL context) every time and never reuse a
connection; keeping one per provider configuration makes a reply cost a request on a warm
connection pool. A client belongs to the loop it is first used on, so a cache belongs to one
loop too and is closed with it.

Each configuration gets a few clients (``SHARDS``), handed out in turn. This was measured for
httpx's connection pool, which looks over all its connections whenever a request starts or
ends, so one pool with hundreds of streams cost each request a scan of hundreds of
connections; the SDKs' aiohttp transport, used since, keeps its connections per host, and
the shards cost it nothing.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from chat_app.providers.base import LLMProvider

logger = logging.getLogger(__name__)


SHARDS = 8


class ClientCache:
    def __init__(self, shards: int = SHARDS) -> None:
        self.shards = max(1, shards)
        self._clients: dict[tuple[str, str, str, float, int], Any] = {}
        self._lock = threading.Lock()  # rounds are prepared on several database threads

    def get(
        self,
        cls: type[LLMProvider],
        *,
        base_url: str,
        api_key: str,
        timeout: float,
        shard: int = 0,
    ) -> Any:
        """``shard``: any stable number of the caller's (a conversation id), so that one
        conversation's rounds reuse one client's warm connection."""
        key = (cls.kind, base_url, api_key, timeout, shard % self.shards)
        with self._lock:
            client = self._clients.get(key)
            if client is None:
                # An admin who edits the key or URL gets new entries; the old ones are closed
                # with the cache (a handful at most over a runner's life).
                client = cls.new_sdk_client(base_url=base_url, api_key=api_key, timeout=timeout)
                self._clients[key] = client
            return client

    def __len__(self) -> int:
        return len(self._clients)

    async def aclose(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                await client.close()
            except Exception:  # closing must not hide why the loop is ending
                logger.warning("could not close an LLM client", exc_info=True)
