"""Latent execution: a tool with no activity has its output produced by the model itself.

Useful to prototype a tool before writing its activity, and honest about it: the call is marked
``latent`` in the trace and on the card. The model is asked for the tool's declared ``output``
schema as structured output (OpenAI ``response_format`` / an Anthropic forced tool).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import ValidationError

from chat_app.models import Conversation
from chat_app.providers import ChatMessage, ProviderError
from chat_app.services.providers import (
    provider_client,
    provider_default,
    provider_for_conversation,
)
from tools_app.errors import ToolError
from tools_app.registry import BaseTool
from tools_app.runtime import ActivityContext
from tools_app.schema import plain_schema

SYSTEM = (
    "You stand in for the tool `{name}`: {description}\n"
    "There is no implementation of this tool. Given its arguments, produce the output the tool "
    "would most plausibly return, as one JSON object matching the schema. Output only JSON."
)


def latent_execute(tool: type[BaseTool], args: BaseTool, ctx: ActivityContext) -> dict[str, Any]:
    """The latent executor of ``tools_app.registry`` (set by ``chat_app.apps``)."""
    conversation = (
        Conversation.objects.filter(pk=ctx.conversation_id).first() if ctx.conversation_id else None
    )
    provider = provider_for_conversation(conversation) if conversation else provider_default()
    if provider is None:
        raise ToolError(
            f"{tool.tool_name} has no activity and no LLM provider is configured "
            "to produce its output latently"
        )
    declared = getattr(tool, "output_schema", None)  # a tool defined from a JSON Schema
    if callable(declared):
        declared = declared()
    if declared:
        schema = declared
    else:
        schema = plain_schema(tool.tool_output) if tool.tool_output else {"type": "object"}
    client = provider_client(provider)
    request = json.dumps(
        {"tool": tool.tool_name, "arguments": args.model_dump(mode="json")}, ensure_ascii=False
    )
    try:
        output = asyncio.run(
            client.complete_json(
                system=SYSTEM.format(name=tool.tool_name, description=tool.description()),
                messages=[ChatMessage(role="user", content=request)],
                schema=schema,
                name=f"{tool.tool_name}_output",
            )
        )
    except ProviderError as exc:
        raise ToolError(f"latent execution of {tool.tool_name} failed: {exc.message}") from None
    if tool.tool_output is not None:
        try:
            output = tool.tool_output.model_validate(output).model_dump(mode="json")
        except ValidationError as exc:
            raise ToolError(
                f"the model's latent output for {tool.tool_name} does not match its schema: "
                f"{exc.errors()[0].get('msg', 'invalid')}"
            ) from None
    return {"latent": True, "output": output}
