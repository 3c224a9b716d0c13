"""Helpers for the approval tests: calls made to wait through the real binding."""

from __future__ import annotations

import shutil
from typing import Any

from django.contrib.auth.models import Group

from tools_app.models import ToolCall, ToolFunctionConfig
from tools_app.runtime import BindContext, workspace_dir_for, workspace_id_for
from tools_app.services.binding import CallRequest, toolcall_bind


def requester_mode(tool: str) -> None:
    ToolFunctionConfig.objects.update_or_create(name=tool, defaults={"approval_mode": "requester"})


def approver_mode(tool: str, *groups: Group, needed: int = 1) -> None:
    config, _ = ToolFunctionConfig.objects.update_or_create(
        name=tool, defaults={"approval_mode": "approver", "approvals_needed": needed}
    )
    config.approver_groups.set(groups)


def bound(tool: str, arguments: dict[str, Any], *, user: Any, conversation: Any) -> ToolCall:
    """A call of ``tool`` bound as the chat binds it."""
    return toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat"),
    )


def waiting_call(tool: str, arguments: dict[str, Any], *, user: Any, conversation: Any) -> ToolCall:
    """A call of ``tool`` bound as the chat binds it, left waiting for approval."""
    call = bound(tool, arguments, user=user, conversation=conversation)
    assert call.status == ToolCall.Status.AWAITING_APPROVAL, (call.status, call.error)
    return call


def workspace_of(conversation: Any, user: Any) -> Any:
    """The conversation's workspace, empty (ids repeat across test runs)."""
    path = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=user.pk))
    shutil.rmtree(path)
    path.mkdir()
    return path
