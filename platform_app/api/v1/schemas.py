"""What ``POST /v1/chat/completions`` accepts: OpenAI's request, checked strictly where it
matters to us and leniently where a client's extras do not (``temperature``, ``max_tokens``,
``user``… are accepted and left to the agent profile)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from platform_app.api.errors import ApiError


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool = False


class InMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[Any] | None = None
    function_call: Any = None

    def text(self, where: str) -> str:
        """The message's text: a string, or its text parts joined. Other parts (images,
        audio, files) are refused with the reason."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        texts = []
        for part in self.content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                texts.append(part["text"])
            else:
                raise ApiError(
                    400,
                    f"{where}: content parts of type {kind!r} are not supported here; send text",
                    code="unsupported_content",
                    param="messages",
                )
        return "\n\n".join(texts)


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = Field(min_length=1, max_length=200)
    messages: list[InMessage] = Field(min_length=1, max_length=10_000)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int | None = None
    tools: list[Any] | None = None
    functions: list[Any] | None = None
    tool_choice: Any = None
    # Ours (standard clients send neither): go on in an existing conversation of the token's
    # owner, and show or hide the tool calls' markdown trace in the reply.
    conversation_id: int | None = Field(default=None, ge=1, le=2**53)
    trace: bool | None = None

    @field_validator("model")
    @classmethod
    def _no_control_characters(cls, value: str) -> str:
        if any(ord(c) < 32 for c in value):
            raise ValueError("the model name has control characters")
        return value
