"""The Test run websocket (``/ws/toolcalls/<id>/``): one tool call's card, live.

Staff only. Same shape as the chat consumer: join the call's group, then send the current
card (so nothing published in between is missed), relay ``cc.event`` payloads, and accept
``approve``/``deny`` (calls that require approval) and ``stop``.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from infra import access
from infra.events import toolcall_group
from infra.websocket import SafeJsonConsumer, db
from tools_app.events import toolcall_event
from tools_app.models import ToolCall
from tools_app.services import approval
from tools_app.services.execution import toolcall_cancel


def _snapshot(call_id: int) -> dict[str, Any] | None:
    call = ToolCall.objects.filter(pk=call_id).first()
    return toolcall_event(call) if call is not None else None


def _stop(call_id: int) -> None:
    call = ToolCall.objects.filter(pk=call_id).first()
    if call is not None and not call.is_terminal:
        toolcall_cancel(call, reason="stopped from the Tools Manager")


@access.socket(access.STAFF)
class ToolCallConsumer(SafeJsonConsumer):
    call_id: int
    group: str

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.call_id = int(self.scope["url_route"]["kwargs"]["call_id"])
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        if not access.staff_member(user):
            await self.close(code=4403)
            return
        if await db(_snapshot)(self.call_id) is None:
            await self.close(code=4404)
            return
        self.group = toolcall_group(self.call_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        snapshot = await db(_snapshot)(self.call_id)
        if snapshot is not None:
            await self.send_json(snapshot)

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        action = content.get("action")
        if action in ("approve", "deny"):
            await self._decide(action, content)
        elif action == "stop":
            await db(_stop)(self.call_id)
        else:
            await self.send_error(f"unknown action {action!r}"[:200])

    async def _decide(self, action: str, content: dict[str, Any]) -> None:
        call_id = content.get("call_id", self.call_id)
        arguments = content.get("arguments")
        # This socket is about one call: a command for another one is refused, not relayed.
        if call_id != self.call_id or (arguments is not None and not isinstance(arguments, dict)):
            await self.send_error(_("malformed approval command"))
            return
        try:
            await db(approval.toolcall_decide)(
                user=self.scope["user"],
                call_id=self.call_id,
                approve=action == "approve",
                arguments=arguments,
            )
        except approval.ApprovalError as exc:
            await self.send_error(str(exc), call_id=self.call_id)
