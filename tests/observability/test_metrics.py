"""/metrics and the metrics ports: who may read them (loopback by default, an allow-list, a
bearer token; never a proxied request by its proxy's address), and what a turn writes."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from django.test import Client, override_settings

from chat_app.services.turns import turn_start
from infra.metrics import exposition, metrics_allowed, metrics_serve
from tests.conftest import wait_turn
from tests.llm_server import Call, Reply, Usage

LOOPBACK = ["127.0.0.0/8", "::1/128"]


@pytest.mark.parametrize(
    ("address", "headers", "allowed"),
    [
        ("127.0.0.1", {}, True),
        ("::1", {}, True),
        ("::ffff:127.0.0.1", {}, True),
        ("10.1.2.3", {}, False),
        ("192.168.0.7", {}, False),
        ("not an address", {}, False),
        # Behind a proxy on the same host every request comes from loopback: a forwarded one is
        # never let in by that address, whatever it claims.
        ("127.0.0.1", {"x-forwarded-for": "127.0.0.1"}, False),
        ("127.0.0.1", {"forwarded": "for=127.0.0.1"}, False),
        ("127.0.0.1", {"x-real-ip": "127.0.0.1"}, False),
        ("10.1.2.3", {"x-forwarded-for": "127.0.0.1"}, False),
        ("10.1.2.3", {"authorization": "Bearer s3cret-metrics"}, True),
        ("127.0.0.1", {"authorization": "Bearer wrong"}, False),
        ("10.1.2.3", {"authorization": "Basic czNjcmV0"}, False),
    ],
)
def test_who_may_read_the_metrics(address, headers, allowed):
    assert (
        metrics_allowed(
            remote_addr=address, headers=headers, networks=LOOPBACK, token="s3cret-metrics"
        )
        is allowed
    )


def test_without_a_token_set_no_bearer_opens_them():
    assert not metrics_allowed(
        remote_addr="10.0.0.1", headers={"authorization": "Bearer "}, networks=LOOPBACK, token=""
    )


def test_an_allow_list_replaces_loopback(db):
    client = Client()
    assert client.get("/metrics").status_code == 200  # the test client is 127.0.0.1
    with override_settings(METRICS_ALLOWED_IPS=["10.0.0.0/8"]):
        assert client.get("/metrics").status_code == 403
        assert client.get("/metrics", REMOTE_ADDR="10.9.8.7").status_code == 200
    with override_settings(METRICS_TOKEN="tok-123"):
        answer = client.get(
            "/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer tok-123"
        )
        assert answer.status_code == 200
        assert answer["Content-Type"].startswith("text/plain; version=")


def test_the_metrics_port_applies_the_same_rule():
    port = metrics_serve(
        kind="worker", port=0, host="127.0.0.1", networks=["10.0.0.0/8"], token="t"
    )
    url = f"http://127.0.0.1:{port}/metrics"
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url, timeout=5)
    assert refused.value.code == 403
    request = urllib.request.Request(url, headers={"Authorization": "Bearer t"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert b'cc_process{kind="worker"}' in response.read()


@pytest.mark.embedded_only  # one process holds them all (distributed: test_cross_process)
def test_a_turn_counts_in_the_web_process_metrics(worker, conversation, user, llm, provider):
    llm.script(
        Reply(calls=[Call("current_time", {"timezone": "UTC"})], usage=Usage(300, 20, cached=100)),
        Reply(text="Noon.", usage=Usage(400, 5)),
    )
    before = exposition(deployment=True).decode()
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="time?").pk)
    after = exposition(deployment=True).decode()

    def total(text: str, prefix: str) -> float:
        return sum(
            float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(prefix)
        )

    tokens = 'cc_model_tokens_total{kind="input",model="scripted-model"}'
    assert total(after, tokens) - total(before, tokens) == 700
    cached = 'cc_model_tokens_total{kind="cached",model="scripted-model"}'
    assert total(after, cached) - total(before, cached) == 100
    calls = 'cc_tool_calls_total{source="chat",status="succeeded",tool="current_time"}'
    assert total(after, calls) - total(before, calls) == 1
    turns = 'cc_turns_total{source="chat",status="succeeded"}'
    assert total(after, turns) - total(before, turns) == 1
    assert 'cc_queue_depth{queue="tools"}' in after and "cc_approvals_pending" in after
