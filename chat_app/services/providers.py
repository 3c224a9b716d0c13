"""Which LLM provider a conversation uses, and the default one seeded from the environment."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from chat_app.models import Conversation, Provider
from chat_app.providers import ClientCache, LLMProvider, make_provider
from chat_app.services.agents import agent_for_conversation
from chat_app.services.provider_probe import ProbeError, models_fetch
from tools_app.selectors import config_memo

logger = logging.getLogger(__name__)


SEEDED_NAME = "default (from environment)"


def provider_seed_from_env() -> Provider | None:
    """With LLM_* set, create or update the environment's provider (the one marked
    ``from_environment``, whatever an admin renamed it to) and make it the default: the
    variables say which endpoint this instance talks to. Idempotent; says what it did in the
    log."""
    cfg: dict[str, Any] = settings.LLM
    if not cfg["provider"] or not cfg["model"]:
        return None
    values = {
        "kind": cfg["provider"],
        "base_url": cfg["base_url"],
        "model": cfg["model"],
        "native_tools": cfg["native_tools"],
        "timeout_seconds": int(cfg["timeout"]),
    }
    with transaction.atomic():
        provider = Provider.objects.select_for_update().filter(from_environment=True).first()
        created = provider is None
        if provider is None:
            name = SEEDED_NAME
            if Provider.objects.filter(name=name).exists():  # an admin's, by chance
                name = f"{SEEDED_NAME} {Provider.objects.count() + 1}"
            provider = Provider(name=name, from_environment=True)
        changed = [f for f, v in values.items() if getattr(provider, f) != v]
        for field, value in values.items():
            setattr(provider, field, value)
        if cfg["api_key"] and provider.api_key != cfg["api_key"]:
            provider.api_key = cfg["api_key"]
            changed.append("api_key")
        previous = list(
            Provider.objects.filter(is_default=True)
            .exclude(pk=provider.pk)
            .values_list("name", flat=True)
        )
        was_default = provider.is_default
        provider.is_default = True
        if created or changed or not was_default:
            provider.save()
        if previous:
            Provider.objects.filter(name__in=previous).update(is_default=False)
    if created:
        logger.info("LLM_* set: created provider %r from the environment", provider.name)
    elif changed:
        logger.info(
            "LLM_* set: updated provider %r from the environment (%s)",
            provider.name,
            ", ".join(changed),
        )
    if previous:
        logger.warning(
            "LLM_* set: provider %r is now the default instead of %s "
            "(unset LLM_PROVIDER/LLM_MODEL to keep an admin's choice)",
            provider.name,
            ", ".join(repr(n) for n in previous),
        )
    elif not was_default and not created:
        logger.info("LLM_* set: provider %r is the default again", provider.name)
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
        temperature=provider.temperature,
        max_output_tokens=provider.max_output_tokens,
    )


def provider_remember_no_tools(provider: Provider) -> None:
    """The endpoint rejected the ``tools`` parameter: use text fallback from now on."""
    Provider.objects.filter(pk=provider.pk).update(tools_supported=False)
    provider.tools_supported = False


# --- the models an endpoint lists, and the chat's model switcher ---------------------------

MODELS_CACHE_SECONDS = 600
ProviderModelsError = ProbeError  # the switcher's name for it


def provider_models(provider: Provider, refresh: bool = False) -> list[str]:
    """The model names the provider's endpoint lists (``GET {base_url}/models`` with its key,
    short timeout), cached for ten minutes per provider version; ``refresh`` asks again.
    Raises ``ProbeError`` (a readable reason, never the key) when the endpoint cannot say."""
    stamp = provider.updated_at.timestamp() if provider.updated_at else 0
    key = f"cc:provider-models:{provider.pk}:{stamp}"
    if not refresh:
        cached = cache.get(key)
        if cached is not None:
            return list(cached)
    names, _ = models_fetch(provider)
    cache.set(key, names, MODELS_CACHE_SECONDS)
    return names


@dataclass(frozen=True)
class ModelChoice:
    provider_id: int
    provider_name: str
    model: str

    @property
    def value(self) -> str:
        return f"{self.provider_id}:{self.model}"


def model_choices(*, refresh: bool = False) -> tuple[list[ModelChoice], list[str]]:
    """What a member may pick in the chat's model switcher, and why a list is short (an
    endpoint that did not answer). Per provider an admin configured: its model and its
    ``allowed_models`` when that list is set (nothing else); otherwise every model its
    endpoint lists."""
    choices: list[ModelChoice] = []
    problems: list[str] = []
    for provider in Provider.objects.order_by("-is_default", "name"):
        if provider.allowed_models:
            names = [provider.model, *provider.allowed_models]
        else:
            try:
                names = [provider.model, *provider_models(provider, refresh=refresh)]
            except ProviderModelsError as exc:
                names = [provider.model]
                problems.append(f"{provider.name}: {exc}")
        for name in dict.fromkeys(str(n) for n in names if n):
            choices.append(ModelChoice(provider.pk, provider.name, name))
    return choices, problems


def conversation_model_choose(*, conversation: Conversation, value: str) -> ModelChoice | None:
    """Use ``value`` (a ModelChoice's ``provider_id:model``; empty: the agent's model) from
    the conversation's next model round on. Raises ValueError for anything not on offer."""
    if not value:
        conversation.model = ""
        conversation.provider = None
        conversation.save(update_fields=["model", "provider", "updated_at"])
        return None
    choices, _ = model_choices()
    chosen = next((c for c in choices if c.value == value), None)
    if chosen is None:
        raise ValueError("that model is not offered here")
    conversation.provider_id = chosen.provider_id
    conversation.model = chosen.model
    conversation.save(update_fields=["model", "provider", "updated_at"])
    return chosen


def conversation_model_in_force(conversation: Conversation) -> tuple[Provider, str] | None:
    """The switcher's pick, if it still stands: its provider exists and, when that provider
    lists ``allowed_models``, the model is still among them. None: the agent decides."""
    if not conversation.model or conversation.provider_id is None:
        return None
    provider = provider_for_conversation(conversation)
    if provider is None:
        return None
    if provider.allowed_models and conversation.model not in {
        provider.model,
        *provider.allowed_models,
    }:
        return None
    return provider, conversation.model
