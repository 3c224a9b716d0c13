"""Adapter for OpenAI Chat Completions and every server that copies it (Ollama, vLLM,
llama.cpp, LM Studio, OpenRouter, ...).

The agent runner hands in a long-lived SDK client (one per provider and event loop, see
``clients.ClientCache``) so connections are reused across hundreds of streams; without one a
fresh client is opened per call and closed by ``async with``. Either way a cancelled stream's
response is closed, which drops its HTTP connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx2
import openai

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
_UNREACHED: tuple[type[Exception], ...] = (openai.APIConnectionError, *TRANSPORT_ERRORS)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: str = ""
    announced: bool = False


class OpenAIProvider(LLMProvider):
    kind = "openai"

    @classmethod
    def new_sdk_client(cls, *, base_url: str, api_key: str, timeout: float) -> openai.AsyncOpenAI:
        # Local servers need no key, but the SDK refuses to start without one. Retries are
        # ours (chat_app.services.retry): they must be visible, cancellable and admin-set.
        limits = sdk_timeout(timeout)
        return openai.AsyncOpenAI(
            base_url=base_url or None,
            api_key=api_key or "not-needed",
            timeout=limits,
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(timeout=limits),
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
            "messages": to_openai_messages(system, messages),
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.sampling(max_tokens),
        }
        if tools and tool_choice:
            request["tool_choice"] = {"type": "function", "function": {"name": tool_choice}}
        if grammar:
            request["grammar"] = grammar  # llama.cpp's extension of Chat Completions

        assembler = _ChunkAssembler()
        try:
            # The body is serialized here, with each tool's JSON kept between rounds (forty
            # tool schemas are most of a request), and sent through the SDK client's own
            # ``post``: status and connection errors still come from the SDK. The response
            # is read raw, as server-sent events: the SDK's stream builds a pydantic model per
            # chunk, which was the largest CPU cost of a turn under load.
            async with self._session() as client:
                response = await client.post(
                    "/chat/completions",
                    cast_to=httpx2.Response,
                    content=request_body(request, tools),
                    options={"headers": {"Content-Type": "application/json"}},
                    stream=True,
                )
                async with contextlib.aclosing(response):  # type: ignore[type-var]
                    async for data in sse_data(response.aiter_lines()):
                        for event in assembled(assembler.feed, data):
                            yield event
        except openai.APIStatusError as exc:
            raise self._status_error(exc, tools_sent=bool(tools)) from exc
        except _UNREACHED as exc:
            # The SDK does not wrap transport errors raised while reading the stream body.
            raise connection_error(
                exc, base_url=self.base_url, timeout=self.timeout, midway=assembler.started
            ) from exc
        except openai.APIError as exc:  # an error event inside the stream
            raise stream_error(exc.message) from exc
        except json.JSONDecodeError as exc:  # an SSE data line that is not JSON
            raise malformed_stream_error(exc) from exc
        yield assembler.reply()

    async def complete_json(
        self, *, system: str, messages: list[ChatMessage], schema: dict[str, Any], name: str
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(system, messages),
            **self.sampling(),
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema},
            },
        }
        try:
            async with self._session() as client:
                try:
                    completion = await client.chat.completions.create(**request)
                except openai.APIStatusError as exc:
                    refused = str(exc).lower()
                    if exc.status_code not in (400, 422) or not (
                        "response_format" in refused or "json_schema" in refused
                    ):
                        raise
                    # Older compatible servers lack json_schema: ask in words instead and let
                    # the schema check below catch a model that does not comply.
                    del request["response_format"]
                    request["messages"] = to_openai_messages(
                        f"{system}\n\nAnswer with only a JSON object matching this JSON Schema:\n"
                        f"{json.dumps(schema, ensure_ascii=False)}",
                        messages,
                    )
                    completion = await client.chat.completions.create(**request)
        except openai.APIStatusError as exc:
            raise self._status_error(exc, tools_sent=False) from exc
        except _UNREACHED as exc:
            raise connection_error(exc, base_url=self.base_url, timeout=self.timeout) from exc
        except openai.APIError as exc:
            raise ProviderError(
                f"the LLM reported an error: {exc.message}", retryable=True
            ) from exc
        if not completion.choices:
            raise ProviderError("the LLM returned no choices")
        return parse_json_reply(completion.choices[0].message.content, schema)

    def _status_error(self, exc: openai.APIStatusError, *, tools_sent: bool) -> ProviderError:
        return status_error(
            exc.status_code,
            error_body_text(exc.body, exc.message),
            base_url=self.base_url,
            model=self.model,
            tools_sent=tools_sent,
            headers=exc.response.headers,
        )


class _ChunkAssembler:
    """Builds the reply from ``chat.completion.chunk`` objects."""

    def __init__(self) -> None:
        self.started = False  # any event arrived: later transport errors broke a live reply
        self.text: list[str] = []
        self.calls: dict[int, _PartialCall] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {}

    def feed(self, chunk: dict[str, Any]) -> Iterator[TextDelta | ToolCallStarted]:
        """One ``chat.completion.chunk`` as decoded JSON."""
        self.started = True
        usage = chunk.get("usage")
        if usage:
            self.usage = openai_usage(usage)
        for choice in (chunk.get("choices") or [])[:1]:  # we never ask for n > 1
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                if not isinstance(content, str):
                    raise TypeError(f"delta content is {type(content).__name__}, not a string")
                self.text.append(content)
                yield TextDelta(content)
            for position, tool_delta in enumerate(delta.get("tool_calls") or []):
                started = self._merge(tool_delta, position)
                if started is not None:
                    yield started
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _merge(self, delta: dict[str, Any], position: int) -> ToolCallStarted | None:
        # Deltas of parallel calls may interleave; only ``index`` ties them together, and
        # id/name usually arrive in a call's first delta only.
        index = delta.get("index")
        index = index if isinstance(index, int) else position
        call = self.calls.setdefault(index, _PartialCall())
        if delta.get("id") and not call.id:
            call.id = str(delta["id"])
        function = delta.get("function")
        if function is not None:
            if function.get("name") and not call.name:
                call.name = str(function["name"])
            arguments = function.get("arguments")
            if arguments:
                if not isinstance(arguments, str):
                    raise TypeError("tool call arguments are not a string")
                call.arguments += arguments
        if call.name and not call.announced:
            call.announced = True
            call.id = call.id or _synthetic_id()
            return ToolCallStarted(index=index, id=call.id, name=call.name)
        return None

    def reply(self) -> ModelReply:
        if self.finish_reason is None:
            raise incomplete_stream_error()
        return ModelReply(
            text="".join(self.text),
            tool_calls=[
                ToolCallRequest(id=c.id or _synthetic_id(), name=c.name, arguments=c.arguments)
                for _, c in sorted(self.calls.items())
            ],
            stop_reason=self.finish_reason,
            usage=self.usage,
        )


def openai_usage(usage: dict[str, Any]) -> dict[str, int]:
    """``usage`` of a chunk (``stream_options.include_usage``) as ``ModelReply.usage``: the
    prompt's tokens (cached ones included, as OpenAI counts them), of which cached, and the
    completion's."""
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return {
        "input_tokens": int(usage.get("prompt_tokens") or 0),
        "output_tokens": int(usage.get("completion_tokens") or 0),
        "cached_tokens": int(cached or 0),
    }


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """The JSON payloads of a server-sent event stream (``data:`` lines, joined per event),
    up to ``[DONE]``. An event carrying ``{"error": ...}`` raises like the SDK's stream does;
    data that is not JSON raises ``json.JSONDecodeError``."""
    data: list[str] = []

    def payload() -> str:
        text = "\n".join(data)
        data.clear()
        return text

    async for line in lines:
        if line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
            continue
        if line or not data:  # event:, id:, retry:, comments; or a blank line with no data
            continue
        text = payload()
        if text.startswith("[DONE]"):
            # Read the (empty) rest of the body so the HTTP/1.1 connection can be reused;
            # a server that keeps talking after [DONE] loses its connection instead.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    async for _ in lines:
                        pass
            return
        yield _checked(json.loads(text))
    if data and not (text := payload()).startswith("[DONE]"):
        yield _checked(json.loads(text))


def _checked(chunk: Any) -> dict[str, Any]:
    if not isinstance(chunk, dict):
        raise malformed_stream_error(
            TypeError(f"a stream event is {type(chunk).__name__}, not an object")
        )
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        raise stream_error(
            message if isinstance(message, str) and message else "an error during streaming"
        )
    return chunk


def _synthetic_id() -> str:
    # A few servers omit ids; the history still needs one to pair calls with results.
    return f"call_{uuid.uuid4().hex[:24]}"


# A tool's JSON as sent, per ToolSpec (the loop keeps one ToolSpec per tool class and mode, so
# the same objects come back every round). The spec is kept with its text so its id stays its.
_TOOL_JSON: dict[int, tuple[ToolSpec, str]] = {}
_TOOL_JSON_MAX = 4096


def _tool_json(tool: ToolSpec) -> str:
    cached = _TOOL_JSON.get(id(tool))
    if cached is not None and cached[0] is tool:
        return cached[1]
    text = json.dumps(to_openai_tool(tool), ensure_ascii=False)
    if len(_TOOL_JSON) >= _TOOL_JSON_MAX:  # specs rebuilt many times (tool groups reloaded)
        _TOOL_JSON.clear()
    _TOOL_JSON[id(tool)] = (tool, text)
    return text


def request_body(request: dict[str, Any], tools: list[ToolSpec] | None) -> bytes:
    """The Chat Completions body: ``request`` as JSON, with ``tools`` spliced in from the
    per-tool cache."""
    text = json.dumps(request, ensure_ascii=False)
    if tools:
        text = f'{text[:-1]}, "tools": [{", ".join(_tool_json(t) for t in tools)}]}}'
    return text.encode("utf-8")


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    function: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:  # only when asked: some compatible servers reject unknown keys
        function["strict"] = True
    return {"type": "function", "function": function}


def to_openai_messages(system: str, messages: list[ChatMessage]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    pending_images: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "tool" and pending_images:
            # Tool messages cannot carry images and must follow their assistant message
            # directly: the images of a run of tool results follow it as one user message.
            out.append({"role": "user", "content": pending_images})
            pending_images = []
        if message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
            if message.images:
                pending_images.append(
                    {
                        "type": "text",
                        "text": f"Image(s) returned by {message.name or 'a tool'} "
                        f"(call {message.tool_call_id}):",
                    }
                )
                pending_images.extend(_image_parts(message))
        elif message.role == "user" and message.images:
            parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}]
            out.append({"role": "user", "content": parts + _image_parts(message)})
        elif message.role == "assistant" and message.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": _valid_json_or_empty(call.arguments),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": message.role, "content": message.content})
    if pending_images:
        out.append({"role": "user", "content": pending_images})
    return out


def _image_parts(message: ChatMessage) -> list[dict[str, Any]]:
    return [
        {"type": "image_url", "image_url": {"url": f"data:{image.mime_type};base64,{image.data}"}}
        for image in message.images
    ]


def _valid_json_or_empty(arguments: str) -> str:
    # Servers that render history through a chat template (Ollama, vLLM) parse the arguments
    # and fail the whole request on broken JSON; the tool result already tells the model.
    try:
        json.loads(arguments)
    except (json.JSONDecodeError, TypeError):
        return "{}"
    return arguments
