"""send_message's Telegram channel against a loopback server that speaks the Bot API's wire
format: POST /bot<token>/sendMessage with JSON {chat_id, text}, answered {"ok": true,
"result": {...}} or {"ok": false, "error_code", "description", "parameters"}. Only chats on
the admin's list (or the one linked to the caller) are reachable, and the bot token shows up
nowhere but in the request line."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.forms.models import model_to_dict

from tests.httpserver import Hit, HttpServer, Response, free_port, serving
from tests.tools.calls import ok, run_tool
from tools_app.events import render_toolcall_card
from tools_app.models import AuditRecord, ToolCall, ToolGroupConfig
from tools_app.services.settings import group_settings_save

pytestmark = [pytest.mark.django_db(transaction=True)]

TOKEN = "123456789:AAE-s3cr3t_bot_key_0123456789abcdef"
KEY = TOKEN.split(":", 1)[1]
_PATH = re.compile(r"^/bot(?P<token>[^/]+)/(?P<method>\w+)$")


class BotApi(HttpServer):
    """A Bot API server: checks the token, records each sendMessage, answers as told."""

    answer: str = "ok"  # ok | echo_url | flood | not_json

    @property
    def sent(self) -> list[dict[str, Any]]:
        return [hit.json() for hit in self.hits if hit.path.endswith("/sendMessage")]


def _bot_api(hit: Hit) -> Response:
    found = _PATH.match(hit.path)
    server: BotApi = hit.server
    if found is None or found["token"] != TOKEN:
        body: dict[str, Any] = {"ok": False, "error_code": 401, "description": "Unauthorized"}
        return 401, [("Content-Type", "application/json")], json.dumps(body).encode()
    if server.answer == "echo_url":
        body = {
            "ok": False,
            "error_code": 400,
            "description": f"Bad Request: chat not found in POST {hit.target} (key {KEY})",
        }
        return 400, [("Content-Type", "application/json")], json.dumps(body).encode()
    if server.answer == "flood":
        body = {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 17",
            "parameters": {"retry_after": 17},
        }
        return 429, [("Content-Type", "application/json")], json.dumps(body).encode()
    if server.answer == "not_json":
        return 502, [], f"Bad gateway for {hit.target}".encode()
    sent = hit.json()
    body = {
        "ok": True,
        "result": {
            "message_id": 42,
            "chat": {"id": sent["chat_id"], "type": "group"},
            "date": 1_800_000_000,
            "text": sent["text"],
        },
    }
    return 200, [("Content-Type", "application/json")], json.dumps(body).encode()


@pytest.fixture
def bot_api() -> Iterator[BotApi]:
    with serving("127.0.0.1", default=_bot_api, server_class=BotApi) as server:
        yield server


def _configure(user: Any, server: BotApi, **extra: Any) -> None:
    values: dict[str, Any] = {
        "telegram_bot_token": TOKEN,
        "telegram_chats": ["-1001234567890", "@team_news"],
        "telegram_api_url": server.url(""),
        "private_allowed": ["127.0.0.1"],
        **extra,
    }
    group_settings_save(user=user, group="messaging", values=values)


def _send(user: Any, chat_id: str, text: str = "Build is green") -> ToolCall:
    return run_tool("send_message", user=user, channel="telegram", chat_id=chat_id, text=text)


@pytest.mark.modes
def test_it_sends_the_text_to_an_allowed_chat(user, bot_api):
    _configure(user, bot_api)
    result = ok(_send(user, "-1001234567890", "Build is **green**"))
    assert result == {
        "success": True,
        "channel": "telegram",
        "delivered": True,
        "chat_id": "-1001234567890",
        "message_id": 42,
        "duration_ms": result["duration_ms"],
    }
    assert bot_api.sent == [{"chat_id": -1001234567890, "text": "Build is **green**"}]
    hit = bot_api.hits[0]
    assert hit.method == "POST" and hit.path == f"/bot{TOKEN}/sendMessage"
    assert hit.headers["content-type"].startswith("application/json")


def test_a_public_channel_name_and_the_seeds_prefix_are_accepted(user, bot_api):
    _configure(user, bot_api)
    ok(_send(user, "@team_news", "one"))
    ok(_send(user, "telegram_-1001234567890", "two"))
    assert bot_api.sent == [
        {"chat_id": "@team_news", "text": "one"},
        {"chat_id": -1001234567890, "text": "two"},
    ]


@pytest.mark.parametrize(
    "chat_id", ["-1009999999999", "@other_channel", "-1001234567890 OR 1", "me", "../sendMessage"]
)
def test_a_chat_not_on_the_list_is_denied_and_nothing_is_sent(user, bot_api, chat_id):
    _configure(user, bot_api)
    call = _send(user, chat_id)
    assert call.status == "denied", (call.status, call.error)
    if chat_id == "me":
        assert "no Telegram chat is linked to you" in call.error
    else:
        assert "is not a Telegram chat an admin allowed" in call.error
        assert "(chats: -1001234567890, @team_news;" in call.error
    assert bot_api.connections == 0


def test_me_is_the_chat_linked_to_the_caller_and_nobody_elses(user, other_user, bot_api):
    _configure(user, bot_api, telegram_people=["alice=555000111", "bob=555000222"])
    ok(_send(user, "me", "for alice"))
    ok(_send(other_user, "me", "for bob"))
    assert bot_api.sent == [
        {"chat_id": 555000111, "text": "for alice"},
        {"chat_id": 555000222, "text": "for bob"},
    ]
    # A linked chat is the person's own: another person cannot name it.
    call = _send(user, "555000222")
    assert call.status == "denied" and "is not a Telegram chat an admin allowed" in call.error
    assert len(bot_api.sent) == 2


def test_without_a_token_the_channel_is_denied(user, bot_api):
    group_settings_save(
        user=user,
        group="messaging",
        values={"telegram_chats": ["-1001234567890"], "telegram_api_url": bot_api.url("")},
    )
    call = _send(user, "-1001234567890")
    assert call.status == "denied" and "no Telegram bot token is configured" in call.error
    assert bot_api.connections == 0


def test_a_429_says_when_to_try_again(user, bot_api):
    _configure(user, bot_api)
    bot_api.answer = "flood"
    call = _send(user, "-1001234567890")
    assert call.status == "failed"
    assert call.error == (
        "Telegram is limiting this bot's messages (429): try again in 17 s; not delivered"
    )
    assert call.result is not None and call.result["retry_after"] == 17


def test_an_error_reply_is_reported_with_its_code_and_description(user, bot_api):
    _configure(user, bot_api)
    bot_api.answer = "echo_url"
    call = _send(user, "-1001234567890")
    assert call.status == "failed"
    assert call.error.startswith("Telegram refused the message (error 400: Bad Request: chat")
    assert call.error.endswith("; not delivered")


def test_a_reply_that_is_not_the_bot_api_is_reported(user, bot_api):
    _configure(user, bot_api)
    bot_api.answer = "not_json"
    call = _send(user, "-1001234567890")
    assert call.status == "failed"
    assert call.error == "the Bot API answered HTTP 502 without a Bot API reply; not delivered"


@pytest.mark.parametrize("answer", ["ok", "echo_url", "flood", "not_json"])
def test_the_token_never_leaves_the_request_line(user, bot_api, caplog, answer):
    """The server echoes the URL (and the key alone) in its error: the token must not reach
    the tool result, the error, the card, the audit log, the stored settings or the logs."""
    caplog.set_level(logging.DEBUG)
    _configure(user, bot_api)
    bot_api.answer = answer
    call = _send(user, "-1001234567890")
    assert len(bot_api.hits) == 1 and TOKEN in bot_api.hits[0].target
    seen = [
        json.dumps(model_to_dict(ToolCall.objects.get(pk=call.pk)), default=str),
        render_toolcall_card(call),
        json.dumps([model_to_dict(r) for r in AuditRecord.objects.all()], default=str),
        json.dumps(list(ToolGroupConfig.objects.values("settings")), default=str),
        caplog.text,
    ]
    for text in seen:
        assert KEY not in text and TOKEN not in text
    if answer == "echo_url":
        assert "/bot<token>/sendMessage" in call.error


def test_a_network_error_does_not_carry_the_token(user, bot_api):
    _configure(user, bot_api, telegram_api_url=f"http://127.0.0.1:{free_port()}/x")
    call = _send(user, "-1001234567890")
    assert call.status == "failed"
    assert KEY not in (call.error or "") and KEY not in json.dumps(call.result)


def test_a_private_api_url_without_the_opt_in_is_refused(user, bot_api):
    _configure(user, bot_api, private_allowed=[])
    call = _send(user, "-1001234567890")
    assert call.status == "denied" and "not a public address" in call.error
    assert KEY not in call.error
    assert bot_api.connections == 0


def test_the_token_is_write_only_and_stored_encrypted(user, bot_api):
    from django.db import connection

    _configure(user, bot_api)
    config = ToolGroupConfig.objects.get(name="messaging")
    assert "telegram_bot_token" not in config.settings
    table = ToolGroupConfig._meta.db_table
    with connection.cursor() as cursor:
        sql = f"SELECT secrets FROM {table} WHERE id = %s"  # noqa: S608  (the model's own table)
        cursor.execute(sql, [config.pk])
        stored = cursor.fetchone()[0]
    assert stored and KEY not in stored, "the token is stored in the clear"
    change = AuditRecord.objects.get(kind=AuditRecord.Kind.SETTINGS)
    assert KEY not in json.dumps(model_to_dict(change), default=str)
    assert "telegram_bot_token" in json.dumps(model_to_dict(change), default=str)


def test_telegram_settings_are_validated():
    from platform_app.executors.messaging.settings import MessagingSettings

    for bad in (
        {"telegram_chats": ["12ab"]},
        {"telegram_chats": ["@x"]},
        {"telegram_people": ["alice"]},
        {"telegram_people": ["alice=1", "alice=2"]},
        {"telegram_api_url": "ftp://api.example"},
        {"telegram_api_url": "https://user@api.example"},
        {"telegram_bot_token": "not-a-token"},
    ):
        with pytest.raises(ValueError) as caught:
            MessagingSettings.model_validate(bad)
        assert "not-a-token" not in str(caught.value)
    settings = MessagingSettings.model_validate({"telegram_api_url": "https://bot.example/"})
    assert settings.telegram_api_url == "https://bot.example"
    assert MessagingSettings().telegram_api_url == "https://api.telegram.org"


@pytest.mark.parametrize("seed", range(8))
def test_the_whole_token_is_replaced_before_its_key_alone(seed):
    """The scrubber's spellings were a set: in some processes the key alone went first and the
    bot id stayed in front of "<token>". Whatever the order, the whole token goes first."""
    from platform_app.messaging import _scrub

    text = f"POST /bot{TOKEN}/sendMessage (key {KEY}, seed {seed})"
    assert _scrub(TOKEN, text) == f"POST /bot<token>/sendMessage (key <token>, seed {seed})"
