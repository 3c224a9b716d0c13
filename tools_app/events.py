"""Events about tool calls: the card (rendered HTML, versioned) and live output chunks."""

from __future__ import annotations

from concurrent.futures import Future

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation

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
    # In the language of the page or conversation the call came from, whichever process
    # renders it (a worker, the runner, someone approving it).
    with translation.override(call.language or settings.LANGUAGE_CODE):
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
    if call.approval_mode == "approver":
        approvals_publish(call)
    return publish(toolcall_groups(call), toolcall_event(call), wait=wait)


# The Approvals page and the top bar's badge listen on one channel group per Django group
# (its approvers), and admins on one more (calls of functions that name no approver group).
APPROVALS_ADMINS = "approvals_admins"


def approvals_group(group_id: int) -> str:
    return f"approvals_group_{group_id}"


def approvals_publish(call: ToolCall) -> None:
    """Tell those who may decide this call that the queue changed (it waits, or no longer).
    The event carries no content: each listener reads what it may see."""
    ids = call.approver_group_ids or []
    groups = [approvals_group(i) for i in ids] if ids else [APPROVALS_ADMINS]
    publish(groups, {"type": "approvals", "id": call.pk, "status": call.status}, wait=False)


def toolcall_publish_output(call: ToolCall, *, offset: int, text: str) -> None:
    publish(
        toolcall_groups(call),
        {"type": "output", "id": call.pk, "offset": offset, "text": text},
        wait=False,
    )
