"""send_message: into another conversation of the same user (visible live there), or to a
webhook target an admin named, POSTed through the SSRF guard. Everything else is denied."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from chat_app.models import Conversation, Message
from tests.helpers import wait_for
from tests.httpserver import Hit, HttpServer, Response, serving
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import EventTap, configure

pytestmark = [pytest.mark.django_db(transaction=True)]


class Receiver(HttpServer):
    """A webhook endpoint on a loopback address; records every connection and body."""

    status = 200

    @property
    def bodies(self) -> list[dict[str, object]]:
        return [hit.json() for hit in self.hits]

    def url(self, path: str = "/hook") -> str:
        return super().url(path)


def _answer(hit: Hit) -> Response:
    return hit.server.status, [], b"ok"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with serving("127.0.0.1", default=_answer, server_class=Receiver) as server:
        yield server


@pytest.fixture
def two_conversations(user):
    here = Conversation.objects.create(owner=user, title="Here")
    there = Conversation.objects.create(owner=user, title="There")
    return here, there


@pytest.mark.modes
def test_it_posts_into_another_conversation_live(user, two_conversations):
    here, there = two_conversations
    with EventTap(f"conversation_{there.pk}") as tap:
        result = ok(
            run_tool(
                "send_message",
                user=user,
                conversation_id=here.pk,
                channel="conversation",
                chat_id=str(there.pk),
                text="The build is **green**.",
            )
        )
        wait_for(lambda: tap.of_type("message"), message="the message event")
    assert result["delivered"] is True and result["title"] == "There"
    message = Message.objects.get(pk=result["message_id"])
    assert message.conversation_id == there.pk and message.role == "assistant"
    assert message.content.startswith("The build is **green**.")
    assert "Sent from the conversation “Here”" in message.content
    event = tap.of_type("message")[0]
    assert event["id"] == message.pk and "<strong>green</strong>" in event["html"]


@pytest.mark.modes
def test_another_users_conversation_is_denied(user, other_user, two_conversations):
    here, _ = two_conversations
    theirs = Conversation.objects.create(owner=other_user, title="Bob's")
    for chat_id in (str(theirs.pk), "999999999"):
        call = run_tool(
            "send_message",
            user=user,
            conversation_id=here.pk,
            channel="conversation",
            chat_id=chat_id,
            text="hi",
        )
        assert call.status == "denied"
        assert call.error == f"policy: conversation {chat_id} is not one of your conversations"
    assert not Message.objects.filter(conversation=theirs).exists()


@pytest.mark.parametrize("chat_id", ["1 OR 1=1", "-1", "../2", "0x10", "1e3", " "])
def test_a_chat_id_that_is_not_an_id_is_denied(user, two_conversations, chat_id):
    here, _ = two_conversations
    call = run_tool(
        "send_message",
        user=user,
        conversation_id=here.pk,
        channel="conversation",
        chat_id=chat_id,
        text="hi",
    )
    assert call.status in ("denied", "failed")
    assert Message.objects.count() == 0


def test_posting_into_this_conversation_is_denied(user, two_conversations):
    here, _ = two_conversations
    call = run_tool(
        "send_message",
        user=user,
        conversation_id=here.pk,
        channel="conversation",
        chat_id=str(here.pk),
        text="echo",
    )
    assert call.status == "denied" and "that is this conversation" in call.error


def test_the_conversation_channel_can_be_switched_off(user, two_conversations):
    here, there = two_conversations
    configure("messaging", conversation_channel=False)
    call = run_tool(
        "send_message",
        user=user,
        conversation_id=here.pk,
        channel="conversation",
        chat_id=str(there.pk),
        text="hi",
    )
    assert call.status == "denied" and "switched off" in call.error


def test_a_named_webhook_receives_the_text(user, receiver):
    configure("messaging", webhooks=[f"team={receiver.url()}"], private_allowed=["127.0.0.1"])
    result = ok(run_tool("send_message", user=user, channel="webhook", chat_id="team", text="Hi"))
    assert result == {
        "success": True,
        "channel": "webhook",
        "delivered": True,
        "webhook": "team",
        "status": 200,
        "duration_ms": result["duration_ms"],
    }
    assert receiver.bodies == [{"text": "Hi"}]


def test_a_webhook_error_status_fails_the_call(user, receiver):
    receiver.status = 500
    configure("messaging", webhooks=[f"team={receiver.url()}"], private_allowed=["127.0.0.1"])
    call = run_tool("send_message", user=user, channel="webhook", chat_id="team", text="Hi")
    assert call.status == "failed" and "answered HTTP 500" in call.error


def test_a_target_not_on_the_list_is_denied(user, receiver):
    configure("messaging", webhooks=[f"team={receiver.url()}"], private_allowed=["127.0.0.1"])
    for chat_id in ("other", receiver.url(), "team "):
        call = run_tool("send_message", user=user, channel="webhook", chat_id=chat_id, text="x")
        if chat_id == "team ":
            assert call.status == "succeeded"  # names are trimmed
            continue
        assert call.status == "denied"
        assert "is not a webhook target an admin allowed (targets: team)" in call.error
    assert len(receiver.bodies) == 1


def test_ssrf_to_loopback_is_denied_without_an_admins_exception(user, receiver):
    configure("messaging", webhooks=[f"local={receiver.url()}"])
    call = run_tool("send_message", user=user, channel="webhook", chat_id="local", text="x")
    assert call.status == "denied" and "not a public address" in call.error
    assert receiver.connections == 0 and receiver.bodies == []


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://0.0.0.0:80/",
        "http://[::1]:80/",
        "http://2130706433/",  # 127.0.0.1 as one number
    ],
)
def test_ssrf_to_metadata_and_loopback_spellings_is_denied(user, url, fake_dns):
    # The name is mapped to the metadata address as a cloud resolver would: a name that does
    # not resolve at all is a network failure, not a policy decision.
    fake_dns["metadata.google.internal"] = ["169.254.169.254"]
    configure("messaging", webhooks=[f"evil={url}"], private_allowed=["metadata.google.internal"])
    call = run_tool("send_message", user=user, channel="webhook", chat_id="evil", text="x")
    assert call.status == "denied", (url, call.status, call.error)


def test_the_url_is_never_shown_to_the_model(user, receiver):
    secret_url = receiver.url("/hooks/T000/B000/s3cr3t-token")
    configure("messaging", webhooks=[f"team={secret_url}"], private_allowed=["127.0.0.1"])
    call = run_tool("send_message", user=user, channel="webhook", chat_id="team", text="x")
    assert "s3cr3t-token" not in json.dumps(call.result)


def test_text_over_the_limit_is_denied(user, two_conversations):
    here, there = two_conversations
    configure("messaging", max_text_chars=10)
    call = run_tool(
        "send_message",
        user=user,
        conversation_id=here.pk,
        channel="conversation",
        chat_id=str(there.pk),
        text="x" * 11,
    )
    assert call.status == "denied" and "the limit is 10" in call.error


def test_webhook_settings_are_validated():
    from platform_app.executors.messaging.settings import MessagingSettings

    for bad in (["nourl"], ["x=ftp://a"], ["a=https://x", "a=https://y"], ["bad name=https://x"]):
        with pytest.raises(ValueError):
            MessagingSettings(webhooks=bad)
