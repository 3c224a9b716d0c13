"""The approvals socket: tells an approver, on every page, how many calls wait for them, and
the Approvals page when its list changed. It only listens; decisions go through the page."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from infra import access
from infra.websocket import SafeJsonConsumer, db
from tools_app.events import APPROVALS_ADMINS, approvals_group
from tools_app.services.approval import approvals_for, decider_group_ids


def _channels(user: Any) -> list[str]:
    groups = [approvals_group(i) for i in sorted(decider_group_ids(user))]
    if user.is_staff:
        groups.append(APPROVALS_ADMINS)
    return groups


def _count(user: Any) -> int:
    return len(approvals_for(user))


@access.socket(access.SIGNED_IN)  # listens only: the count of calls waiting for this person
class ApprovalsConsumer(SafeJsonConsumer):
    groups_joined: list[str]

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.groups_joined = await db(_channels)(user)
        for group in self.groups_joined:
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        await self._send_count()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)

    async def cc_event(self, event: dict[str, Any]) -> None:
        payload = event["payload"]
        if payload.get("type") == "approvals":
            await self._send_count(changed=payload.get("id"))

    async def _send_count(self, changed: Any = None) -> None:
        count = await db(_count)(self.scope["user"])
        await self.send_json({"type": "approvals", "count": count, "changed": changed})

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        await self.send_error(_("decide approvals on the Approvals page"))
