"""A conversation speaks its person's language: notices, cards and refusals in it, and the
tool descriptions the model reads too, unless the agent profile fixes them. Names of tools and
arguments, the arguments themselves, binding and the audit never depend on the language."""

from __future__ import annotations

from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group
from django.test import override_settings
from django.utils import translation

from chat_app.models import Agent, Message, Turn
from chat_app.routing import websocket_urlpatterns
from chat_app.services.turns import turn_start
from platform_app.models import Quota, UserPreferences
from platform_app.preferences.websocket import LanguageMiddleware
from tests.conftest import wait_turn
from tests.helpers import signed_in
from tests.llm_server import Call, Reply, Usage
from tools_app.events import render_toolcall_card
from tools_app.executors.time.tools import CurrentTime
from tools_app.i18n import schema_in
from tools_app.models import AuditRecord, ToolCall, ToolGroupConfig
from tools_app.registry import TOOLS

pytestmark = [pytest.mark.modes]


def offered(request: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t["function"] for t in request["tools"] if t["function"]["name"] == name)


def without_descriptions(node: Any) -> Any:
    if isinstance(node, list):
        return [without_descriptions(n) for n in node]
    if isinstance(node, dict):
        return {k: without_descriptions(v) for k, v in node.items() if k != "description"}
    return node


def run_in(language: str, conversation: Any, user: Any, text: str) -> Turn:
    with translation.override(language):  # as the chat page's websocket does
        turn = turn_start(conversation=conversation, user_id=user.pk, text=text)
    return wait_turn(turn.pk)


@override_settings(AGENT_MAX_ROUNDS=2)
def test_a_russian_conversation_gets_russian_notices_cards_and_tool_descriptions(
    worker, conversation, user, llm, provider
):
    llm.set_default(Reply(calls=[Call("current_time", {"timezone": "UTC"})]))
    turn = run_in("ru", conversation, user, "который час?")
    conversation.refresh_from_db()
    assert conversation.language == "ru"
    assert turn.status == Turn.Status.LIMITED
    notice = Message.objects.get(turn=turn, role=Message.Role.NOTICE)
    assert notice.content.startswith("Остановлено после 2 раундов вызовов инструментов")
    function = offered(llm.requests[0], "current_time")
    assert function["description"] == (
        "Вернуть текущие дату и время в часовом поясе IANA (например, Europe/Berlin, UTC)."
    )
    timezone = function["parameters"]["properties"]["timezone"]
    assert timezone["description"].startswith("Имя часового пояса IANA")
    # The same function, the same arguments: only the words differ.
    english = CurrentTime.openai_schema()["function"]
    assert without_descriptions(function) == without_descriptions(english)
    calls = list(ToolCall.objects.filter(turn=turn))
    assert [c.arguments for c in calls] == [{"timezone": "UTC"}] * 2
    assert all(c.status == "succeeded" and c.language == "ru" for c in calls)
    card = render_toolcall_card(calls[0])
    assert "успешно" in card and "Вызов инструмента current_time: успешно" in card
    record = AuditRecord.objects.filter(tool_call=calls[0]).first()
    assert record is not None and record.tool == "current_time"


def test_an_agent_profile_fixed_to_english_offers_english_descriptions(
    worker, conversation, user, llm, provider
):
    agent = Agent.objects.create(name="English tools", tool_language="en")
    conversation.agent = agent
    conversation.save(update_fields=["agent"])
    llm.script(Reply(text="Сейчас утро."))
    turn = run_in("ru", conversation, user, "который час?")
    assert turn.status == Turn.Status.SUCCEEDED
    function = offered(llm.requests[0], "current_time")
    assert function["description"] == CurrentTime.description()
    assert function == CurrentTime.openai_schema()["function"]


def test_an_english_conversation_offers_english_descriptions(
    worker, conversation, user, llm, provider
):
    llm.script(Reply(text="It is morning."))
    run_in("en", conversation, user, "what time is it?")
    assert offered(llm.requests[0], "current_time") == CurrentTime.openai_schema()["function"]


def test_a_conversation_without_a_provider_says_so_in_its_language(worker, conversation, user):
    turn = run_in("ru", conversation, user, "привет")
    notice = Message.objects.get(turn=turn, role=Message.Role.NOTICE)
    assert notice.content.startswith("LLM-провайдер не настроен, поэтому я не могу ответить.")


def test_a_refused_call_is_denied_in_the_conversations_language(
    worker, conversation, user, llm, provider
):
    ToolGroupConfig.objects.create(name="time", enabled=False)
    llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="Не вышло."))
    turn = run_in("ru", conversation, user, "который час?")
    call = ToolCall.objects.get(turn=turn)
    assert call.status == ToolCall.Status.DENIED
    # What the model and the audit read stays as binding wrote it…
    assert "current_time" in call.error and call.error.isascii()
    # …and the person reads the card in their language.
    assert "отклонён" in render_toolcall_card(call)


def test_every_tool_keeps_its_names_and_shapes_in_every_language():
    translated = 0
    for tool in TOOLS.values():
        for strict in (True, False):
            english = tool.openai_schema(strict=strict)
            russian = schema_in(english, "ru")
            assert without_descriptions(russian) == without_descriptions(english), tool.tool_name
            translated += russian != english
    assert translated >= len(TOOLS)  # every built-in tool has its words in Russian


async def test_the_websocket_speaks_the_browsers_language(conversation, user):
    app = LanguageMiddleware(URLRouter(websocket_urlpatterns))
    comm = WebsocketCommunicator(
        app, f"/ws/conversations/{conversation.pk}/", headers=[(b"accept-language", b"ru,en")]
    )
    signed_in(comm, user)
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_json_from()  # snapshot
    await comm.send_json_to({"action": "send", "text": "   "})
    event = await comm.receive_json_from()
    assert event == {"type": "error", "message": "сообщение пустое"}
    await comm.disconnect()


async def test_the_websocket_follows_the_persons_own_choice(conversation, user):
    await database_sync_to_async(UserPreferences.objects.create)(user=user, language="ru")
    app = LanguageMiddleware(URLRouter(websocket_urlpatterns))
    comm = WebsocketCommunicator(
        app, f"/ws/conversations/{conversation.pk}/", headers=[(b"accept-language", b"en")]
    )
    signed_in(comm, user)
    connected, _ = await comm.connect()
    assert connected
    await comm.receive_json_from()  # snapshot
    await comm.send_json_to({"action": "send", "text": "/help"})
    notice = None
    while notice is None:
        event = await comm.receive_json_from(timeout=10)
        if event["type"] == "message" and event["role"] == "notice":
            notice = event
    assert "Слэш-команды" in notice["html"]
    assert "<strong>Время</strong>" in notice["html"]  # the tool groups, named in Russian
    assert "/current_time" in notice["html"]
    await comm.send_json_to({"action": "send", "text": "/help current_time"})
    notice = None
    while notice is None:
        event = await comm.receive_json_from(timeout=10)
        if event["type"] == "message" and event["role"] == "notice":
            notice = event
    assert "Вернуть текущие дату и время" in notice["html"]  # current_time, described in Russian
    await comm.disconnect()


def test_a_used_up_quota_ends_a_russian_turn_in_russian_and_audits_in_english(
    worker, conversation, user, llm, provider
):
    support = Group.objects.create(name="support")
    user.groups.add(support)
    Quota.objects.create(group=support, metric="tokens", period="month", limit=1000)
    llm.set_default(Reply(text="Хорошо.", usage=Usage(input=1000, output=100)))
    assert run_in("ru", conversation, user, "раз").status == Turn.Status.SUCCEEDED
    refused = run_in("ru", conversation, user, "два")
    assert refused.status == Turn.Status.FAILED
    words = Message.objects.get(turn=refused, role=Message.Role.NOTICE).content
    assert words.startswith("⚠ Месячный бюджет группы support в 1\xa0000 токенов исчерпан;")
    assert "обнуляется 1 " in words and "в 00:00 UTC" in words
    record = AuditRecord.objects.get(kind=AuditRecord.Kind.QUOTA)
    assert record.error.startswith("the support group's monthly budget of 1,000 tokens")


@pytest.mark.parametrize(
    ("usage", "title"),
    [
        (
            {"model": "m", "input_tokens": 435, "output_tokens": 30, "cached_tokens": 400},
            "Токены, ушедшие на этот ответ, из них 400 входных — из кэша провайдера (m)",
        ),
        (
            {"input_tokens": 12, "output_tokens": 3, "estimated": True},
            "Оценка по тексту: провайдер не сообщил расход",
        ),
    ],
)
def test_a_replys_usage_explains_itself_in_the_conversations_language(usage, title):
    """The hover text of a reply's token count, not only the count, is in Russian."""
    from html import unescape

    from chat_app.rendering import message_html

    message = Message(pk=2, conversation_id=1, turn_id=1, role="assistant", content="Да.")
    message.usage = usage
    with translation.override("ru"):
        html = unescape(str(message_html(message)))
    assert f'class="message-usage" title="{title}"' in html
