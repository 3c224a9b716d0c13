"""Streaming LLM adapters behind one small interface (see ``base``).

Adding a provider: subclass ``LLMProvider`` in a module of this package, implement ``stream``
and ``complete_json``, and add its kind and dotted path to ``PROVIDERS``. Adapters are
imported on first use: the SDKs take seconds to import and most processes need one or none.
"""

from __future__ import annotations

import importlib

from chat_app.providers.base import (
    ChatMessage,
    ImagePart,
    LLMProvider,
    ModelReply,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolsNotSupported,
    ToolSpec,
)
from chat_app.providers.clients import ClientCache

PROVIDERS: dict[str, str] = {
    "openai": "chat_app.providers.openai_provider.OpenAIProvider",
    "anthropic": "chat_app.providers.anthropic_provider.AnthropicProvider",
}


def provider_class(kind: str) -> type[LLMProvider]:
    try:
        dotted = PROVIDERS[kind]
    except KeyError:
        known = ", ".join(repr(k) for k in PROVIDERS)
        # A ProviderError, not a ValueError: the kind comes from admin-edited configuration
        # and the message should reach that admin rather than end as a 500.
        raise ProviderError(
            f"unknown LLM provider kind {kind!r}; expected one of {known}"
        ) from None
    module, _, name = dotted.rpartition(".")
    cls: type[LLMProvider] = getattr(importlib.import_module(module), name)
    return cls


def make_provider(
    kind: str,
    *,
    base_url: str,
    api_key: str,
    model: str,
    timeout: float = 120.0,
    clients: ClientCache | None = None,
    shard: int = 0,
    temperature: float | None = None,
    max_output_tokens: int | None = None,
) -> LLMProvider:
    """Build the adapter for ``kind`` ("openai" for any OpenAI-compatible server, "anthropic").
    ``clients``: take a long-lived SDK client from this cache (the caller's event loop), the
    one ``shard`` (a conversation id) maps to."""
    cls = provider_class(kind)
    sdk_client = (
        clients.get(cls, base_url=base_url, api_key=api_key, timeout=timeout, shard=shard)
        if clients is not None
        else None
    )
    return cls(
        base_url=base_url,
        api_key=api_key,
        model=model,
        timeout=timeout,
        sdk_client=sdk_client,
        temperature=temperature,
        max_output_tokens=max_output_tokens,
    )


__all__ = [
    "PROVIDERS",
    "ChatMessage",
    "ClientCache",
    "ImagePart",
    "LLMProvider",
    "ModelReply",
    "ProviderError",
    "StreamEvent",
    "TextDelta",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolSpec",
    "ToolsNotSupported",
    "make_provider",
    "provider_class",
]
