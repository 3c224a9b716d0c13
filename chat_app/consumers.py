"""The chat websocket: relays events to the browser and accepts send/stop, edit/regenerate/branch
and retry commands.

Thin on purpose: every decision is a service call; this only checks who is asking and that
the frame is well formed (``SafeJsonConsumer``: a malformed frame gets an ``error`` event and
the socket stays open).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from chat_app import selectors
from chat_app.services import branches, privacy, turns
from infra import access
from infra.events import conversation_group
from infra.websocket import SafeJsonConsumer, db
from tools_app.services import approval, standing


@access.socket(access.SIGNED_IN)  # and the conversation's own check: conversation_read
class ConversationConsumer(SafeJsonConsumer):
    conversation_id: int
    group: str

    async def connect(self) -> None:
        user = self.scope.get("user")
        self.conversation_id = int(self.scope["url_route"]["kwargs"]["conversation_id"])
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        # Someone else's conversation needs the auditor permission, and the read is audited.
        visible = await db(privacy.conversation_read)(
            user=user, conversation_id=self.conversation_id, via="live"
        )
        if visible is None:  # not theirs, or gone: same answer, no hint which
            await self.close(code=4403)
            return
        self.group = conversation_group(self.conversation_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        # Its turns and messages are read after joining the group: nothing published in
        # between can be missed (the row itself, read above, only names them).
        await self.send_json(await db(selectors.conversation_snapshot)(visible))

    async def disconnect(self, code: int) -> None:
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        action = content.get("action")
        user = self.scope["user"]
        try:
            if action == "send":
                text = content.get("text")
                if not isinstance(text, str):
                    await self.send_error(_("'text' must be a string"))
                    return
                await db(turns.turn_send)(
                    user=user,
                    conversation_id=self.conversation_id,
                    text=text,
                    files=content.get("files"),
                )
            elif action == "regenerate":
                await db(branches.turn_regenerate)(
                    user=user, conversation_id=self.conversation_id, turn_id=content.get("turn_id")
                )
            elif action == "edit":
                await db(branches.turn_edit)(
                    user=user,
                    conversation_id=self.conversation_id,
                    turn_id=content.get("turn_id"),
                    text=content.get("text"),
                )
            elif action == "branch":
                await db(branches.branch_choose)(
                    user=user, conversation_id=self.conversation_id, turn_id=content.get("turn_id")
                )
            elif action == "stop":
                await db(turns.turn_stop_current)(user=user, conversation_id=self.conversation_id)
            elif action in ("approve", "deny"):
                await self._decide(user, action, content)
            elif action == "retry":  # a card's Retry (after connecting an account)
                await db(turns.toolcall_retry)(
                    user=user, conversation_id=self.conversation_id, call_id=content.get("call_id")
                )
            else:
                await self.send_error(f"unknown action {action!r}"[:200])
        except turns.TurnError as exc:
            await self.send_error(str(exc))

    async def _decide(self, user: Any, action: str, content: dict[str, Any]) -> None:
        call_id = content.get("call_id")
        arguments = content.get("arguments")
        if not isinstance(call_id, int) or (
            arguments is not None and not isinstance(arguments, dict)
        ):
            await self.send_error(_("malformed approval command"))
            return
        try:
            await db(standing.toolcall_decide_widened)(
                user=user,
                call_id=call_id,
                approve=action == "approve",
                widening=content.get("widening"),
                arguments=arguments,
                conversation_id=self.conversation_id,
            )
        except approval.ApprovalError as exc:
            await self.send_error(str(exc), call_id=call_id)
