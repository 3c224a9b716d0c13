"""The chat's model switcher: what it offers (the provider's /models, or its allowed_models),
that the pick drives the next round, that nothing else can be picked, and token usage."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from chat_app.models import Conversation, Message, Provider, Turn
from chat_app.services.providers import (
    ProviderModelsError,
    model_choices,
    provider_models,
)
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.llm_server import Reply, ScriptedLLM


@pytest.fixture
def big_llm() -> Any:
    with ScriptedLLM(extra_models=("big-model", "tiny-model")) as server:
        yield server


@pytest.fixture
def big_provider(big_llm: ScriptedLLM, transactional_db: None) -> Provider:
    return Provider.objects.create(
        name="big", kind="openai", base_url=big_llm.openai_base_url, model="scripted-model"
    )


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_models_are_listed_from_the_endpoint_cached_and_refreshable(big_llm, big_provider):
    assert provider_models(big_provider) == ["big-model", "scripted-model", "tiny-model"]
    assert provider_models(big_provider) == ["big-model", "scripted-model", "tiny-model"]
    assert big_llm.model_lists == 1  # cached
    provider_models(big_provider, refresh=True)
    assert big_llm.model_lists == 2
    # allowed_models, when set, is the whole offer (the endpoint is not asked).
    Provider.objects.filter(pk=big_provider.pk).update(allowed_models=["tiny-model"])
    choices, problems = model_choices()
    assert [(c.provider_name, c.model) for c in choices] == [
        ("big", "scripted-model"),
        ("big", "tiny-model"),
    ]
    assert problems == [] and big_llm.model_lists == 2


def test_an_unreachable_endpoint_still_offers_its_own_model(transactional_db):
    gone = Provider.objects.create(
        name="gone", kind="openai", base_url="http://127.0.0.1:9/v1", model="m1"
    )
    with pytest.raises(ProviderModelsError, match="cannot reach"):
        provider_models(gone)
    choices, problems = model_choices()
    assert [c.model for c in choices] == ["m1"] and "gone" in problems[0]


@pytest.mark.modes
def test_the_picked_model_answers_from_the_next_round_on(
    worker, user, conversation, llm, provider, big_llm, big_provider
):
    big_llm.script(Reply(text="big answer"))
    llm.script(Reply(text="default answer"))
    client = _client(user)
    page = client.get(f"/c/{conversation.pk}/model/")
    assert page.status_code == 200 and f'value="{big_provider.pk}:big-model"' in page.text
    saved = client.post(f"/c/{conversation.pk}/model/", {"model": f"{big_provider.pk}:big-model"})
    assert saved.status_code == 200 and "used from the next reply on" in saved.text
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hi").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    assert [r["model"] for r in big_llm.requests] == ["big-model"] and llm.requests == []
    answer = Message.objects.get(turn=turn, role="assistant")
    assert answer.content == "big answer"
    # Token usage, when the provider reports it, is kept and shown under the answer.
    assert answer.usage["model"] == "big-model" and answer.usage["output_tokens"] > 0
    html = client.get(f"/c/{conversation.pk}/").text
    assert "out · big-model" in html
    # Back to the agent's model.
    client.post(f"/c/{conversation.pk}/model/", {"model": ""})
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="again").pk)
    assert [r["model"] for r in llm.requests] == ["scripted-model"]


def test_a_model_not_on_offer_is_refused(user, other_user, conversation, big_provider):
    client = _client(user)
    url = f"/c/{conversation.pk}/model/"
    Provider.objects.filter(pk=big_provider.pk).update(allowed_models=["tiny-model"])
    for crafted in (
        f"{big_provider.pk}:big-model",  # listed by the endpoint, but not allowed
        f"{big_provider.pk}:gpt-5-pro",
        f"{big_provider.pk + 99}:scripted-model",  # no such provider
        "scripted-model",
        f"{big_provider.pk}:tiny-model\n",
    ):
        response = client.post(url, {"model": crafted})
        assert response.status_code == 400, crafted
        assert "not offered" in response.text
    conversation.refresh_from_db()
    assert conversation.model == "" and conversation.provider_id is None
    # Someone else's conversation: not found, nothing changed.
    theirs = Conversation.objects.create(owner=other_user)
    response = client.post(f"/c/{theirs.pk}/model/", {"model": f"{big_provider.pk}:tiny-model"})
    assert response.status_code == 404
    assert client.get(f"/c/{theirs.pk}/model/").status_code == 204  # nothing, not even a hint
    theirs.refresh_from_db()
    assert theirs.model == ""
    # An admin narrowing allowed_models later also ends a pick made before.
    client.post(url, {"model": f"{big_provider.pk}:tiny-model"})
    conversation.refresh_from_db()
    assert conversation.model == "tiny-model"
    Provider.objects.filter(pk=big_provider.pk).update(allowed_models=["other"])
    from chat_app.services.providers import conversation_model_in_force

    conversation.refresh_from_db()
    assert conversation_model_in_force(conversation) is None


def test_a_crafted_send_cannot_name_a_model(worker, user, conversation, llm, provider):
    """The websocket's send takes text only: a "model" in the frame is ignored."""
    from asgiref.sync import async_to_sync

    from tests.channels.test_consumer import collect_until_turn_ends, communicator

    llm.script(Reply(text="ok"))

    async def crafted() -> None:
        comm = communicator(conversation.pk, user)
        await comm.connect()
        await comm.receive_json_from()
        frame = {"action": "send", "text": "hi", "model": "gpt-5-pro", "provider": 1}
        await comm.send_json_to(frame)
        await collect_until_turn_ends(comm)
        await comm.disconnect()

    async_to_sync(crafted)()
    assert [r["model"] for r in llm.requests] == ["scripted-model"]
    assert json.dumps(llm.requests).count("gpt-5-pro") == 0
