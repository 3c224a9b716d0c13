"""Webhooks against real HTTP receivers on loopback addresses: deliveries from the real app
server (its worker) are signed and verify, a 500 is tried again with backoff until it is
delivered, and the SSRF guard refuses loopback and metadata targets and any redirect."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from platform_app.models import WebhookDelivery, WebhookEndpoint
from platform_app.webhooks.services import (
    delivery_attempt,
    endpoint_create,
    signature,
    signature_valid,
    webhook_emit,
)
from tests.api.conftest import token_for
from tests.helpers import wait_for
from tests.httpserver import Hit, Response, serving

RECEIVER = "127.0.0.61"


@pytest.fixture
def receiver() -> Iterator[Any]:
    answers: list[int] = []  # statuses to give, in order; then 204
    lock = threading.Lock()

    def hook(hit: Hit) -> Response:
        with lock:
            status = answers.pop(0) if answers else 204
        return status, [], b"ok" if status < 300 else b"try later"

    def moved(hit: Hit) -> Response:
        return 302, [("Location", f"http://{RECEIVER}/elsewhere")], b""

    routes = {("POST", "/hook"): hook, ("POST", "/moved"): moved, ("POST", "/elsewhere"): hook}
    with serving(RECEIVER, routes) as server:
        server.answers = answers
        yield server


def _hooks(server: Any) -> list[Hit]:
    return [hit for hit in server.hits if hit.path == "/hook"]


@pytest.mark.modes
def test_a_finished_turn_and_a_failed_call_are_delivered_signed(
    api_server: str, receiver: Any, user: Any, staff_user: Any
) -> None:
    endpoint, secret = endpoint_create(
        user=staff_user,
        name="audit sink",
        url=receiver.url("/hook"),
        events=["turn.finished", "toolcall.failed"],
        allow_private=True,
    )
    api = {"Authorization": f"Bearer {token_for(user)}"}
    conversation = httpx2.post(f"{api_server}/api/conversations", json={}, headers=api).json()
    sent = httpx2.post(
        f"{api_server}/api/conversations/{conversation['id']}/messages",
        json={"text": '/schedule_remove {"name": "Olympus Mons"}'},
        headers=api,
    ).json()

    wait_for(lambda: len(_hooks(receiver)) >= 2, timeout=30, message="two deliveries")

    by_event = {hit.headers["x-cc-event"]: hit for hit in _hooks(receiver)}
    assert set(by_event) == {"turn.finished", "toolcall.failed"}
    for event, hit in by_event.items():
        assert hit.headers["content-type"] == "application/json"
        assert signature_valid(secret, hit.headers["x-cc-signature"], hit.body)
        assert not signature_valid("whsec_other", hit.headers["x-cc-signature"], hit.body)
        assert not signature_valid(secret, hit.headers["x-cc-signature"], hit.body + b" ")
        body = hit.json()
        assert body["event"] == event and body["id"] == hit.headers["x-cc-delivery"]
        stamp = int(hit.headers["x-cc-timestamp"])
        assert hit.headers["x-cc-signature"] == signature(secret, stamp, hit.body)
    turn = by_event["turn.finished"].json()["data"]
    assert turn["turn_id"] == sent["turn"]["id"] and turn["status"] == "failed"
    assert turn["source"] == "api" and turn["user"] == "alice"
    failed = by_event["toolcall.failed"].json()["data"]
    assert failed["tool"] == "schedule_remove" and "Olympus Mons" in failed["error"]
    assert "Olympus" not in json.dumps(turn)  # no conversation text in a turn's event
    deliveries = WebhookDelivery.objects.filter(endpoint=endpoint)
    wait_for(lambda: all(d.status == "delivered" for d in deliveries.all()), timeout=10)
    assert [d.attempt_log.get().status_code for d in deliveries] == [204, 204]


@pytest.mark.modes
def test_a_500_is_tried_again_with_backoff_until_it_is_delivered(
    api_server: str, receiver: Any, staff_user: Any, user: Any
) -> None:
    receiver.answers.extend([500, 503])
    endpoint, secret = endpoint_create(
        user=staff_user,
        name="flaky",
        url=receiver.url("/hook"),
        events=["turn.finished"],
        allow_private=True,
    )
    api = {"Authorization": f"Bearer {token_for(user)}"}
    conversation = httpx2.post(f"{api_server}/api/conversations", json={}, headers=api).json()
    httpx2.post(
        f"{api_server}/api/conversations/{conversation['id']}/messages",
        json={"text": '/current_time {"timezone": "UTC"}'},
        headers=api,
    )

    delivery = wait_for(
        lambda: WebhookDelivery.objects.filter(endpoint=endpoint, status="delivered").first(),
        timeout=30,
        message="the delivery to get through",
    )

    assert delivery.attempts == 3
    log = list(delivery.attempt_log.values_list("number", "status_code", "error"))
    assert log == [(1, 500, "answered HTTP 500"), (2, 503, "answered HTTP 503"), (3, 204, "")]
    hits = _hooks(receiver)
    assert len({hit.headers["x-cc-delivery"] for hit in hits}) == 1  # the same delivery
    times = [a.started_at for a in delivery.attempt_log.all()]
    assert (times[2] - times[1]) > (times[1] - times[0])  # the wait doubled
    assert all(signature_valid(secret, h.headers["x-cc-signature"], h.body) for h in hits)


def _refused(url: str, *, allow_private: bool, staff_user: Any) -> WebhookDelivery:
    # Saved before the save-time check (or a name that resolved elsewhere then): delivery
    # guards on its own, every time.
    endpoint, _ = endpoint_create(
        user=staff_user, name="t", url="https://hooks.invalid/", events=["schedule.fired"]
    )
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(url=url, allow_private=allow_private)
    endpoint.refresh_from_db()
    assert webhook_emit("schedule.fired", lambda: {"schedule_id": 1}) >= 1
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    # Tried here, or by a worker that took it first (never by both: an attempt claims it).
    assert delivery_attempt(delivery.pk) is None  # not tried again: refused for good
    wait_for(lambda: WebhookDelivery.objects.get(pk=delivery.pk).status != "pending")
    delivery.refresh_from_db()
    return delivery


def test_a_loopback_target_is_refused_unless_an_admin_allowed_it(
    receiver: Any, staff_user: Any
) -> None:
    delivery = _refused(receiver.url("/hook"), allow_private=False, staff_user=staff_user)

    assert delivery.status == "failed" and delivery.attempts == 1
    assert delivery.last_error.startswith("refused by the SSRF guard: ")
    assert "127.0.0.61 is not a public address: loopback" in delivery.last_error
    receiver.assert_untouched()


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/iam/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
    ],
)
def test_a_metadata_target_is_refused_even_with_private_hosts_allowed(
    url: str, staff_user: Any
) -> None:
    delivery = _refused(url, allow_private=True, staff_user=staff_user)

    assert delivery.status == "failed"
    assert "cloud metadata" in delivery.last_error and "never allowed" in delivery.last_error
    assert delivery.attempt_log.get().status_code is None


def test_a_redirect_is_not_followed_nor_delivered(receiver: Any, staff_user: Any) -> None:
    delivery = _refused(receiver.url("/moved"), allow_private=True, staff_user=staff_user)

    assert delivery.status == "failed" and delivery.last_status_code == 302
    assert delivery.last_error == "answered HTTP 302: a redirect, which webhooks do not follow"
    assert receiver.paths() == ["/moved"]


def test_a_receiver_that_refuses_is_not_tried_again_and_an_old_signature_fails(
    receiver: Any, staff_user: Any
) -> None:
    receiver.answers.append(410)
    delivery = _refused(receiver.url("/hook"), allow_private=True, staff_user=staff_user)
    assert delivery.status == "failed" and delivery.last_error == "answered HTTP 410"
    hit = _hooks(receiver)[0]
    secret = WebhookEndpoint.objects.get().secret
    header = hit.headers["x-cc-signature"]
    assert signature_valid(secret, header, hit.body)
    assert not signature_valid(secret, header, hit.body, now=time.time() + 3600)  # a replay
    assert not signature_valid(secret, "t=abc,v1=00", hit.body)


def test_two_workers_trying_one_delivery_at_once_send_it_once(
    receiver: Any, staff_user: Any
) -> None:
    endpoint, _ = endpoint_create(
        user=staff_user,
        name="t",
        url=receiver.url("/hook"),
        events=["schedule.fired"],
        allow_private=True,
    )
    webhook_emit("schedule.fired", lambda: {"schedule_id": 1})
    delivery = WebhookDelivery.objects.get(endpoint=endpoint)
    start = threading.Barrier(4)

    def attempt() -> None:
        start.wait()
        delivery_attempt(delivery.pk)

    workers = [threading.Thread(target=attempt) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    wait_for(lambda: WebhookDelivery.objects.get(pk=delivery.pk).status == "delivered")
    assert list(delivery.attempt_log.values_list("number", "status_code")) == [(1, 204)]
    assert len(_hooks(receiver)) == 1
