"""Events about tool calls: the card (rendered HTML, versioned) and live output chunks."""

from __future__ import annotations

from concurrent.futures import Future

from django.template.loader import render_to_string

from infra.events import conversation_group, publish, toolcall_group
from tools_app.models import ToolCall


def toolcall_groups(call: ToolCall) -> list[str]:
    # A chat call is watched on its conversation; the per-call group serves Test runs and
    # API calls, which have no conversation.
    if call.conversation_id is not None and call.source != ToolCall.Source.TEST:
        return [conversation_group(call.conversation_id)]
    groups = [toolcall_group(call.pk)]
    if call.conversation_id is not None:
        groups.append(conversation_group(call.conversation_id))
    return groups


def render_toolcall_card(call: ToolCall) -> str:
    return render_to_string("tools/_toolcall_card.html", {"call": call})


def toolcall_event(call: ToolCall) -> dict[str, object]:
    return {
        "type": "toolcall",
        "id": call.pk,
        "message_id": call.message_id,
        "turn_id": call.turn_id,
        "status": call.status,
        "version": call.version,
        "html": render_toolcall_card(call),
    }


def toolcall_publish(call: ToolCall, *, wait: bool = True) -> Future[None]:
    return publish(toolcall_groups(call), toolcall_event(call), wait=wait)


def toolcall_publish_output(call: ToolCall, *, offset: int, text: str) -> None:
    publish(
        toolcall_groups(call),
        {"type": "output", "id": call.pk, "offset": offset, "text": text},
        wait=False,
    )
