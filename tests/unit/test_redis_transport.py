"""kombu's Redis channel keeps one client per connection pool (infra.redis_transport)."""

from __future__ import annotations

import uuid

import pytest
from django.conf import settings
from kombu import Connection, Queue

from infra.redis_transport import Channel, Transport

pytestmark = pytest.mark.distributed_only


def test_one_client_per_pool_and_messages_still_flow() -> None:
    name = f"cc-test-{uuid.uuid4().hex[:8]}"
    with Connection(settings.REDIS_URL, transport=Transport) as conn:
        channel = conn.default_channel
        assert isinstance(channel, Channel)
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second
            assert first.connection_pool is channel.pool
        given = object()
        with channel.conn_or_acquire(given) as client:
            assert client is given
        channel._disconnect_pools()  # what a fork or a reconnect does
        with channel.conn_or_acquire() as third:
            assert third is not first and third.connection_pool is channel.pool

        queue = Queue(name, routing_key=name)
        with conn.Producer() as producer:
            producer.publish({"n": 1}, routing_key=name, declare=[queue])
        with conn.SimpleQueue(queue) as simple:
            message = simple.get(timeout=2)
            assert message.payload == {"n": 1}
            message.ack()
            with channel.conn_or_acquire() as client:
                assert not client.hexists(channel.unacked_key, message.delivery_tag)
            simple.queue.delete()
