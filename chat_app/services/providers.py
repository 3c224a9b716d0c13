"""Which LLM provider a conversation uses, and the default one seeded from the environment."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings

from chat_app.models import Conversation, Provider
from chat_app.providers import ClientCache, LLMProvider, make_provider
from chat_app.services.agents import agent_for_conversation
from tools_app.selectors import config_memo

logger = logging.getLogger(__name__)


def provider_seed_from_env() -> Provider | None:
    """Create (or update) the default provider from LLM_* variables. Idempotent."""
    cfg: dict[str, Any] = settings.LLM
    if not cfg["provider"] or not cfg["model"]:
        return None
    provider, created = Provider.objects.update_or_create(
        name="default (from environment)",
        defaults={
            "kind": cfg["provider"],
            "base_url": cfg["base_url"],
            "model": cfg["model"],
            "native_tools": cfg["native_tools"],
            "timeout_seconds": int(cfg["timeout"]),
        },
    )
    if cfg["api_key"] and provider.api_key != cfg["api_key"]:
        provider.api_key = cfg["api_key"]
        provider.save(update_fields=["api_key"])
    if not Provider.objects.filter(is_default=True).exclude(pk=provider.pk).exists():
        Provider.objects.filter(pk=provider.pk).update(is_default=True)
    if created:
        logger.info("seeded LLM provider %s from the environment", provider)
    return provider


def provider_default() -> Provider | None:
    # Unordered, picked in Python (see agent_default): this runs every model round.
    defaults = list(Provider.objects.filter(is_default=True).order_by())
    if defaults:
        return min(defaults, key=lambda p: p.name)
    return Provider.objects.first()


def provider_for_conversation(conversation: Conversation) -> Provider | None:
    """Within a model round (``config_pinned``) read once per configuration token."""
    provider_id = conversation.provider_id
    if provider_id is not None:
        return config_memo(
            ("provider", provider_id),
            lambda: next(iter(Provider.objects.filter(pk=provider_id).order_by()), None),
        )
    return config_memo(("provider", None), provider_default)


def models_allowed(*, conversation_id: int | None) -> list[str]:
    """The model names a turn in this conversation may ask for instead of its agent's (a
    schedule's or a subagent's ``model``): the agent's model, its provider's, and the
    provider's ``allowed_models``. None: a new conversation (the default agent)."""
    found = Conversation.objects.filter(pk=conversation_id).first() if conversation_id else None
    conversation = found or Conversation()
    agent = agent_for_conversation(conversation)
    provider = agent.provider or provider_for_conversation(conversation)
    names = [agent.model, *([provider.model, *provider.allowed_models] if provider else [])]
    return list(dict.fromkeys(str(n) for n in names if n))


def provider_client(
    provider: Provider, *, model: str = "", clients: ClientCache | None = None, shard: int = 0
) -> LLMProvider:
    return make_provider(
        provider.kind,
        base_url=provider.base_url,
        api_key=provider.api_key,
        model=model or provider.model,
        timeout=float(provider.timeout_seconds),
        clients=clients,
        shard=shard,
    )


def provider_remember_no_tools(provider: Provider) -> None:
    """The endpoint rejected the ``tools`` parameter: use text fallback from now on."""
    Provider.objects.filter(pk=provider.pk).update(tools_supported=False)
    provider.tools_supported = False
