"""Adapter for the Anthropic Messages API (and servers that copy it).

Like the OpenAI adapter, it uses the long-lived SDK client it is given, or opens a fresh one
per call and closes it; a cancelled stream's response is closed either way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
from anthropic.types import RawMessageStreamEvent

from chat_app.providers.base import (
    ChatMessage,
    LLMProvider,
    ModelReply,
    ProviderError,
    StreamEvent,
    TextDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolSpec,
    as_prebuilt_body,
    assembled,
    connection_error,
    error_body_text,
    incomplete_stream_error,
    malformed_stream_error,
    parse_json_reply,
    sdk_timeout,
    status_error,
    stream_error,
)
from chat_app.providers.transport import TRANSPORT_ERRORS

# The SDK's connection error, and the transport's errors it lets through.
_UNREACHED: tuple[type[Exception], ...] = (anthropic.APIConnectionError, *TRANSPORT_ERRORS)

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


@dataclass
class _ToolBlock:
    ordinal: int  # position among the reply's tool calls, the index the UI sees
    id: str
    name: str
    start_input: object
    partial_json: str = ""

    def arguments(self) -> str:
        if self.partial_json:
            return self.partial_json
        # No input_json_delta at all: a tool without arguments, or a compatible server that
        # sent the whole input in content_block_start.
        return json.dumps(self.start_input if isinstance(self.start_input, dict) else {})


class _EventAssembler:
    """Builds the reply from raw Messages stream events (one content block at a time)."""

    def __init__(self) -> None:
        self.started = False  # any event arrived: later transport errors broke a live reply
        self.text: list[str] = []
        self.tools: dict[int, _ToolBlock] = {}  # content-block index -> tool call
        self.stop_reason: str | None = None
        self._raw: dict[str, int] = {}  # the usage fields as the server last gave them
        self.finished = False

    def feed(self, event: RawMessageStreamEvent) -> Iterator[TextDelta | ToolCallStarted]:
        self.started = True
        if event.type == "message_start":
            self._count(getattr(event.message, "usage", None))
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "text" and block.text:
                self.text.append(block.text)
                yield TextDelta(block.text)
            elif block.type == "tool_use":
                tool = _ToolBlock(len(self.tools), block.id, block.name, block.input)
                self.tools[event.index] = tool
                yield ToolCallStarted(index=tool.ordinal, id=tool.id, name=tool.name)
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.text.append(delta.text)
                yield TextDelta(delta.text)
            elif delta.type == "input_json_delta" and event.index in self.tools:
                self.tools[event.index].partial_json += delta.partial_json
            # thinking, signature and citation deltas carry nothing we show
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            self._count(getattr(event, "usage", None))
        elif event.type == "message_stop":
            self.finished = True

    def _count(self, usage: object) -> None:
        """message_start carries the prompt's counts, message_delta the output's so far (and,
        from newer servers, the prompt's again): the last value given for each wins."""
        if usage is None:  # a compatible server that reports nothing
            return
        for field in _USAGE_FIELDS:
            value = getattr(usage, field, None)
            if isinstance(value, int):
                self._raw[field] = value

    def _usage(self) -> dict[str, int]:
        """As ``ModelReply.usage``: the prompt's tokens with the cache's counted in (Anthropic
        counts cache reads and writes apart from ``input_tokens``), of which read from cache."""
        raw = self._raw
        if not raw:
            return {}
        cached = raw.get("cache_read_input_tokens", 0)
        written = raw.get("cache_creation_input_tokens", 0)
        return {
            "input_tokens": raw.get("input_tokens", 0) + cached + written,
            "output_tokens": raw.get("output_tokens", 0),
            "cached_tokens": cached,
        }

    def reply(self) -> ModelReply:
        if not self.finished:
            raise incomplete_stream_error()
        return ModelReply(
            text="".join(self.text),
            tool_calls=[
                ToolCallRequest(id=b.id, name=b.name, arguments=b.arguments())
                for _, b in sorted(self.tools.items())
            ],
            stop_reason=self.stop_reason,
            usage=self._usage(),
        )


class AnthropicProvider(LLMProvider):
    kind = "anthropic"

    @classmethod
    def new_sdk_client(
        cls, *, base_url: str, api_key: str, timeout: float
    ) -> anthropic.AsyncAnthropic:
        # Always pass a key: without one the SDK goes looking for credentials in the
        # environment and in profile files, which is not where admins configure this app.
        limits = sdk_timeout(timeout)
        return anthropic.AsyncAnthropic(
            base_url=base_url or None,
            api_key=api_key or "not-needed",
            timeout=limits,
            max_retries=0,
            http_client=anthropic.DefaultAioHttpClient(timeout=limits),
        )

    async def stream(
        self,
        *,
        system: str,
        messages: list[ChatMessage],
        tools: list[ToolSpec] | None,
        max_tokens: int | None = None,
        tool_choice: str | None = None,
        grammar: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.default_max_tokens,
            **self.sampling(max_tokens),  # Anthropic requires max_tokens: the default above
            "messages": to_anthropic_messages(messages),
            "stream": True,
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [to_anthropic_tool(t) for t in tools]
            if tool_choice:
                request["tool_choice"] = {"type": "tool", "name": tool_choice}

        assembler = _EventAssembler()
        try:
            async with self._session() as client:
                events = await client.messages.create(
                    **as_prebuilt_body(request, ("model", "max_tokens", "stream"))
                )
                async with events:
                    async for event in events:
                        for item in assembled(assembler.feed, event):
                            yield item
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc, tools_sent=bool(tools)) from exc
        except _UNREACHED as exc:
            # The SDK does not wrap transport errors raised while reading the stream body.
            raise connection_error(
                exc, base_url=self.base_url, timeout=self.timeout, midway=assembler.started
            ) from exc
        except anthropic.APIError as exc:
            raise stream_error(exc.message) from exc
        except json.JSONDecodeError as exc:  # an SSE data line that is not JSON
            raise malformed_stream_error(exc) from exc
        yield assembler.reply()

    async def complete_json(
        self, *, system: str, messages: list[ChatMessage], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        # Anthropic's dependable structured output is a forced tool call: the tool's input
        # schema is the wanted schema and its input is the answer.
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.default_max_tokens,
            **self.sampling(),
            "messages": to_anthropic_messages(messages),
            "tools": [
                {
                    "name": name,
                    "description": "Give your answer as this tool's input.",
                    "input_schema": schema,
                }
            ],
            "tool_choice": {"type": "tool", "name": name},
        }
        if system:
            request["system"] = system
        try:
            async with self._session() as client:
                # temperature is no argument of this SDK's create(): it goes in the body.
                extra = {k: request.pop(k) for k in ("temperature",) if k in request}
                message = await client.messages.create(**request, extra_body=extra or None)
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc, tools_sent=False) from exc
        except _UNREACHED as exc:
            raise connection_error(exc, base_url=self.base_url, timeout=self.timeout) from exc
        except anthropic.APIError as exc:
            raise ProviderError(
                f"the LLM reported an error: {exc.message}", retryable=True
            ) from exc
        for block in message.content:
            if block.type == "tool_use" and block.name == name:
                return parse_json_reply(dict(block.input), schema)
        raise ProviderError(f"the LLM did not answer through the {name!r} tool as required")

    def _status_error(self, exc: anthropic.APIStatusError, *, tools_sent: bool) -> ProviderError:
        detail = error_body_text(exc.body, exc.message)
        if exc.status_code < 400:
            # An ``error`` event inside a 200 stream, e.g. overloaded_error mid-reply.
            return stream_error(detail)
        return status_error(
            exc.status_code,
            detail,
            base_url=self.base_url,
            model=self.model,
            tools_sent=tools_sent,
            headers=exc.response.headers,
        )


def to_anthropic_tool(tool: ToolSpec) -> dict[str, Any]:
    # Anthropic has no "strict" flag on custom tools; the schema is enforced by the loop.
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def to_anthropic_messages(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    """Convert history into strictly alternating user/assistant turns of content blocks.

    Tool results travel as ``tool_result`` blocks in a user turn; consecutive turns of the
    same role are merged, which also puts the results of parallel calls into one message,
    as Anthropic requires.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue  # Anthropic rejects empty turns and empty text blocks
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _blocks(message: ChatMessage) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        # An empty result is refused by some servers; say so in words instead.
        text = message.content or "(no output)"
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": [{"type": "text", "text": text}, *_image_blocks(message)]
            if message.images
            else text,
        }
        if message.is_error:
            result["is_error"] = True
        return "user", [result]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "user":
        blocks.extend(_image_blocks(message))
    if message.role == "assistant":
        for call in message.tool_calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
            )
    return message.role, blocks


def _image_blocks(message: ChatMessage) -> list[dict[str, Any]]:
    return [
        {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data},
        }
        for image in message.images
    ]


def _input(call: ToolCallRequest) -> dict[str, Any]:
    # tool_use.input must be an object; a call whose JSON was broken was already answered with
    # an error result, so an empty input keeps the history valid without hiding anything.
    try:
        value = json.loads(call.arguments)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}
