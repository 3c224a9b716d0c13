"""The top bar's Approvals link follows the approver groups at once, also on the chat page,
where the set of groups that approve is read once per configuration (a memo under the
configuration token): adding, removing and deleting a group each move the token on."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.test import Client

from chat_app.models import Conversation
from tests.approvals.conftest import approver_mode
from tools_app.models import ToolFunctionConfig


def _link(client: Client, conversation_id: int) -> bool:
    page = client.get(f"/c/{conversation_id}/")
    assert page.status_code == 200
    return 'id="approvals-link"' in page.content.decode()


def test_the_link_follows_the_approver_groups_on_the_chat_page(other_user, leads):
    client = Client()
    client.force_login(other_user)  # bob, in leads
    mine = Conversation.objects.create(owner=other_user)
    assert not _link(client, mine.pk)  # leads approve nothing yet
    approver_mode("current_time", leads)
    assert _link(client, mine.pk)
    ToolFunctionConfig.objects.get(name="current_time").approver_groups.clear()
    assert not _link(client, mine.pk)
    approver_mode("current_time", Group.objects.create(name="night shift"), leads)
    assert _link(client, mine.pk)
    leads.delete()  # bob's only group
    assert not _link(client, mine.pk)
