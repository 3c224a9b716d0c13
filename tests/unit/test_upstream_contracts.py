"""What the fenced overrides of upstream classes rely on: infra/redis_layer.py (channels_redis's
layer), infra/memory_transport.py and infra/redis_transport.py (kombu's transports). Each
overrides private methods of one exact version, pinned in pyproject.toml. When an upgrade
breaks a test here, compare upstream's methods with ours before moving the pin; the
behaviour is then checked by tests/channels/test_redis_layer.py and
tests/unit/test_redis_transport.py against a real Redis, and below for the memory transport."""

from __future__ import annotations

import inspect
import threading
import time
import tomllib
import uuid
from importlib.metadata import version
from pathlib import Path
from typing import Any

from channels_redis.core import RedisChannelLayer
from kombu import Connection, Queue
from kombu.transport import memory
from kombu.transport import redis as kombu_redis
from kombu.transport.virtual import base as virtual

from infra import memory_transport, redis_transport
from infra.redis_layer import FewerTripsRedisChannelLayer

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def pinned(package: str) -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    for spec in dependencies:
        name, _, rest = spec.partition("==")
        if name.split("[")[0].strip().lower() == package:
            return rest.strip()
    raise AssertionError(f"{package} is not pinned with == in pyproject.toml")


def parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_it_runs_on_the_pinned_channels_redis_and_kombu() -> None:
    assert version("channels-redis") == pinned("channels-redis")
    assert version("kombu") == pinned("kombu")


# --- infra/redis_layer.py -------------------------------------------------------------------


def test_the_layer_methods_it_overrides_keep_their_signatures() -> None:
    for name, expected in (
        ("_brpop_with_clean", ["self", "index", "channel", "timeout"]),
        ("_clean_receive_backup", ["self", "index", "channel"]),
        ("group_send", ["self", "group", "message"]),
    ):
        upstream = getattr(RedisChannelLayer, name)
        assert inspect.iscoroutinefunction(upstream), name
        assert parameters(upstream) == expected, name
        ours = getattr(FewerTripsRedisChannelLayer, name)
        assert ours is not upstream and parameters(ours) == expected, name


def test_a_receive_still_goes_through_the_overridden_steps() -> None:
    """One message: ``_brpop_with_clean`` until it returns one, then ``_clean_receive_backup``
    (which ours leaves to the next receive)."""
    source = inspect.getsource(RedisChannelLayer.receive_single)
    assert "await self._brpop_with_clean(" in source
    assert "self._clean_receive_backup(" in source


def test_the_layer_helpers_it_calls_answer_as_it_expects() -> None:
    layer = FewerTripsRedisChannelLayer(hosts=["redis://127.0.0.1:6379/0"], prefix="cc")  # no I/O
    assert layer.ring_size == 1 and layer.expiry > 0 and layer.group_expiry > 0
    assert layer._backup_channel_name("cc.x!y") == "cc.x!y$inflight"
    assert layer._group_key("g") == b"cc:group:g"
    assert parameters(RedisChannelLayer.connection) == ["self", "index"]
    by_connection, messages, capacities = layer._map_channel_keys_to_connection(
        ["specific.abc!def"], {"type": "t"}
    )
    keys = by_connection[0]
    assert len(keys) == 1 and isinstance(messages[keys[0]], bytes)
    assert capacities[keys[0]] == layer.capacity


# --- infra/memory_transport.py --------------------------------------------------------------


def test_the_memory_transport_methods_it_overrides_keep_their_signatures() -> None:
    assert parameters(memory.Channel._put) == ["self", "queue", "message", "kwargs"]
    assert parameters(memory.Channel._put_fanout) == [
        "self",
        "exchange",
        "message",
        "routing_key",
        "kwargs",
    ]
    assert memory.Transport.drain_events is virtual.Transport.drain_events
    assert parameters(virtual.Transport.drain_events) == ["self", "connection", "timeout"]
    assert memory_transport.Transport.drain_events is not virtual.Transport.drain_events


def test_upstreams_drain_still_polls_what_ours_waits_on() -> None:
    """Ours is upstream's loop with the sleep between empty polls replaced by a wait for a
    put: the same ``cycle.get(self._deliver, timeout=…)`` raising ``Empty``."""
    source = inspect.getsource(virtual.Transport.drain_events)
    assert "get(self._deliver, timeout=timeout)" in source and "except Empty" in source
    assert "sleep(polling_interval)" in source


def test_a_waiting_worker_takes_a_message_at_once_not_after_a_poll() -> None:
    """The gain itself: upstream sleeps ``polling_interval`` (1 s) after an empty poll."""
    queue = Queue(f"cc-contract-{uuid.uuid4().hex[:8]}")
    published: list[float] = []
    taken: list[float] = []

    def publish() -> None:  # another thread, as a task queued by the web thread
        with Connection("memory://", transport=memory_transport.Transport) as other:
            published.append(time.monotonic())
            other.Producer().publish({"n": 1}, routing_key=queue.name, declare=[queue])

    with Connection("memory://", transport=memory_transport.Transport) as conn:
        assert conn.transport.polling_interval == 1.0
        with conn.Consumer(queue, callbacks=[lambda body, message: taken.append(time.monotonic())]):
            threading.Timer(0.2, publish).start()
            conn.drain_events(timeout=5)
    assert taken and published
    assert taken[0] - published[0] < 0.5


# --- infra/redis_transport.py ---------------------------------------------------------------


def test_the_redis_transport_method_it_overrides_keeps_its_signature() -> None:
    assert parameters(kombu_redis.Channel.conn_or_acquire) == ["self", "client"]
    assert parameters(kombu_redis.Channel._create_client) == ["self", "asynchronous"]
    assert "pool" in dir(kombu_redis.Channel)
    assert redis_transport.Channel.conn_or_acquire is not kombu_redis.Channel.conn_or_acquire


# --- infra/sessions.py ------------------------------------------------------------------------
# An override of an upstream method held by its source rather than a pin (Django takes patch
# releases): when this fails after an upgrade, compare upstream's method with ours.


def test_djangos_session_read_is_still_the_row_by_key_while_unexpired() -> None:
    """``infra.sessions.SessionStore._get_session_from_db`` reads the row by its key and
    compares the expiry in Python: upstream's must still be that one lookup, forgetting the
    key when nothing is found."""
    from django.contrib.sessions.backends import db

    from infra.sessions import SessionStore

    source = inspect.getsource(db.SessionStore._get_session_from_db)
    assert "self.model.objects.get(" in source
    assert "session_key=self.session_key, expire_date__gt=timezone.now()" in source
    assert "self._session_key = None" in source
    assert parameters(db.SessionStore._get_session_from_db) == ["self"]
    assert db.SessionStore.load is SessionStore.load  # load() decodes what the read returns
    assert SessionStore._get_session_from_db is not db.SessionStore._get_session_from_db
