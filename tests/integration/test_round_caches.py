"""What model rounds keep between rounds, and that an admin's change still applies at once.

Agent and provider rows are read once per configuration token (``config_memo``); SDK clients
are kept per provider in a few shards, one per conversation.
"""

from __future__ import annotations

import pytest

from chat_app.models import Agent, Provider
from chat_app.providers import ClientCache, provider_class
from chat_app.services.agents import agent_for_conversation
from chat_app.services.providers import provider_for_conversation
from tools_app import selectors
from tools_app.models import ToolConfigVersion

pytestmark = [pytest.mark.modes]


def _token() -> str:
    return ToolConfigVersion.objects.get(pk=1).token


def test_a_round_reads_the_agent_once_per_token_and_sees_an_edit_next_round(
    conversation, provider, django_assert_num_queries
):
    ToolConfigVersion.bump()
    agent = Agent.objects.create(name="Terse", system_prompt="Be terse.")
    conversation.agent = agent
    conversation.save(update_fields=["agent"])
    with selectors.config_pinned():
        first = agent_for_conversation(conversation)
        assert first.system_prompt == "Be terse."
        provider_for_conversation(conversation)
    # The pin reads the token (unchanged), then nothing else is read.
    with selectors.config_pinned(), django_assert_num_queries(0):
        assert agent_for_conversation(conversation) is first
        assert provider_for_conversation(conversation).pk == provider.pk

    before = _token()
    agent.system_prompt = "Be very terse."
    agent.save()
    assert _token() != before
    with selectors.config_pinned():
        assert agent_for_conversation(conversation).system_prompt == "Be very terse."


def test_bulk_updates_of_providers_and_agents_move_the_token_on(conversation, provider):
    ToolConfigVersion.bump()
    before = _token()
    Provider.objects.filter(pk=provider.pk).update(tools_supported=False)
    after_provider = _token()
    assert after_provider != before
    with selectors.config_pinned():
        assert provider_for_conversation(conversation).tools_supported is False
    Agent.objects.create(name="Other")
    Agent.objects.filter(name="Other").update(is_default=False)
    assert _token() != after_provider
    provider.delete()
    with selectors.config_pinned():
        assert provider_for_conversation(conversation) is None


def test_outside_a_round_nothing_is_kept(conversation, provider):
    first = provider_for_conversation(conversation)
    assert provider_for_conversation(conversation) is not first  # read again, not shared


def test_sdk_clients_are_sharded_per_conversation():
    cache = ClientCache(shards=4)
    cls = provider_class("openai")
    get = lambda shard: cache.get(  # noqa: E731
        cls, base_url="http://127.0.0.1:9/v1", api_key="", timeout=10.0, shard=shard
    )
    assert get(7) is get(7)  # one conversation keeps its client (and warm connection)
    assert len({id(get(n)) for n in range(4)}) == 4
    assert get(4) is get(0)  # at most ``shards`` clients per configuration
    assert len(cache) == 4
