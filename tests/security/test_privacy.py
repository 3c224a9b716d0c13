"""A conversation is its owner's (issue 22, item 5). Reading someone else's — the page, its
live connection, its reports, its screenshots, the Django admin — needs the permission
``chat_app.audit_conversations`` (through a group; superusers hold every permission), and
every such read is an audit record. Being staff is not enough. Schedules and memory are
never readable by id across users."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission

from chat_app.models import Conversation, Message
from chat_app.routing import websocket_urlpatterns
from platform_app.models import CoreMemoryEntry, MemoryChunk, Schedule
from tests.helpers import logged_in, signed_in
from tools_app.models import AuditRecord
from tools_app.runtime import workspace_dir_for, workspace_id_for

pytestmark = [pytest.mark.modes]  # the websocket and the queries, on Redis and PostgreSQL too

User = get_user_model()
REPORT = "20260101_000000_quarterly.md"


@pytest.fixture
def secret(user: Any) -> Conversation:
    """Alice's conversation, with a message and a report."""
    conversation = Conversation.objects.create(owner=user, title="Alice's secret plans")
    Message.objects.create(conversation=conversation, role="user", content="the launch date")
    reports = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    (reports / "reports").mkdir(parents=True, exist_ok=True)
    (reports / "reports" / REPORT).write_text("# Quarterly\nnumbers")
    return conversation


@pytest.fixture
def plain_staff(transactional_db: None) -> Any:
    """An admin (staff) who is not a superuser and holds no permission."""
    return User.objects.create_user("stan", password="stan-password-1", is_staff=True)


@pytest.fixture
def auditor(transactional_db: None) -> Any:
    """A member (not staff) of a group that carries the auditor permission."""
    group = Group.objects.create(name="auditors")
    group.permissions.add(
        Permission.objects.get(content_type__app_label="chat_app", codename="audit_conversations")
    )
    person = User.objects.create_user("audrey", password="audrey-password-1")
    person.groups.add(group)
    return person


def reads() -> list[tuple[str, int | None, str, str]]:
    return [
        (r.username, r.conversation_id, r.tool, r.detail["owner"])
        for r in AuditRecord.objects.filter(kind="read").order_by("id")
    ]


def urls(conversation: Conversation) -> list[str]:
    return [
        f"/c/{conversation.pk}/",
        f"/c/{conversation.pk}/reports/",
        f"/c/{conversation.pk}/reports/{REPORT}",
    ]


def test_a_member_reads_nothing_of_another_users_conversation(secret, other_user):
    bob = logged_in(other_user)
    for url in urls(secret):
        assert bob.get(url).status_code == 404, url
    assert reads() == []


def test_staff_without_the_permission_read_nothing(secret, plain_staff):
    stan = logged_in(plain_staff)
    for url in urls(secret):
        assert stan.get(url).status_code == 404, url
    assert reads() == []


def test_an_auditor_reads_and_each_read_is_audited(secret, auditor):
    audrey = logged_in(auditor)
    page = audrey.get(f"/c/{secret.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "the launch date" in html and "Your reading is recorded in the audit log." in html
    assert 'id="composer" class="composer" autocomplete="off" hidden' in html  # read-only
    download = audrey.get(f"/c/{secret.pk}/reports/{REPORT}")
    assert download.status_code == 200 and download.content == b"# Quarterly\nnumbers"
    assert reads() == [
        ("audrey", secret.pk, "page", "alice"),
        ("audrey", secret.pk, f"report {REPORT}", "alice"),
    ]
    record = AuditRecord.objects.filter(kind="read").first()
    assert record.conversation_title == "Alice's secret plans" and record.status == "read"


def test_the_owners_own_reads_are_not_audited(secret, user):
    assert logged_in(user).get(f"/c/{secret.pk}/").status_code == 200
    assert reads() == []


def test_repeated_reads_within_a_minute_are_one_record(secret, auditor):
    audrey = logged_in(auditor)
    audrey.get(f"/c/{secret.pk}/")
    audrey.get(f"/c/{secret.pk}/")
    assert len(reads()) == 1
    AuditRecord.objects.filter(kind="read").update(
        created_at=AuditRecord.objects.get(kind="read").created_at - timedelta(minutes=2)
    )
    audrey.get(f"/c/{secret.pk}/")
    assert len(reads()) == 2


def test_a_superuser_holds_the_permission_and_is_audited_too(secret, staff_user):
    assert logged_in(staff_user).get(f"/c/{secret.pk}/").status_code == 200
    assert reads() == [("root", secret.pk, "page", "alice")]


def test_an_auditor_is_not_staff_the_audit_log_stays_with_staff(secret, auditor):
    audrey = logged_in(auditor)
    audrey.get(f"/c/{secret.pk}/")
    assert audrey.get("/tools/audit/").status_code == 403
    record = AuditRecord.objects.get(kind="read")
    assert audrey.get(f"/tools/audit/{record.pk}/").status_code == 403


def test_the_audit_log_links_a_conversation_only_for_those_who_may_read_it(
    secret, plain_staff, staff_user
):
    logged_in(staff_user).get(f"/c/{secret.pk}/")
    record = AuditRecord.objects.get(kind="read")
    html = logged_in(plain_staff).get(f"/tools/audit/{record.pk}/").content.decode()
    assert f'href="/c/{secret.pk}/' not in html
    assert "needs the auditor permission" in html
    assert "root</strong> read <strong>alice</strong>'s conversation through page" in html
    html = logged_in(staff_user).get(f"/tools/audit/{record.pk}/").content.decode()
    assert f'href="/c/{secret.pk}/"' in html and "opening it is an audited read" in html


def communicator(conversation: Conversation, user: Any) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    signed_in(comm, user)
    return comm


async def test_the_live_connection_is_refused_to_members_and_plain_staff(
    secret, other_user, plain_staff
):
    for person in (other_user, plain_staff):
        connected, code = await communicator(secret, person).connect()
        assert not connected and code == 4403


async def test_an_auditors_live_connection_gets_the_snapshot_and_is_audited(secret, auditor):
    from channels.db import database_sync_to_async

    comm = communicator(secret, auditor)
    connected, _ = await comm.connect()
    assert connected
    snapshot = await comm.receive_json_from()
    assert snapshot["type"] == "snapshot" and "the launch date" in snapshot["html"]
    await comm.send_json_to({"action": "send", "text": "/current_time {}"})
    error = await comm.receive_json_from()
    assert error["type"] == "error" and "conversation not found" in error["message"]
    await comm.disconnect()
    assert await database_sync_to_async(reads)() == [("audrey", secret.pk, "live", "alice")]


def test_the_django_admin_shows_conversations_only_to_auditors_and_audits_it(
    secret, plain_staff, staff_user
):
    view = Permission.objects.filter(
        content_type__app_label="chat_app", codename__in=["view_conversation", "view_message"]
    )
    plain_staff.user_permissions.add(*view)
    stan = logged_in(plain_staff)
    assert stan.get(f"/admin/chat_app/conversation/{secret.pk}/change/").status_code == 403
    assert stan.get("/admin/chat_app/message/").status_code == 403
    root = logged_in(staff_user)
    page = root.get(f"/admin/chat_app/conversation/{secret.pk}/change/")
    assert page.status_code == 200 and "the launch date" in page.content.decode()
    assert reads() == [("root", secret.pk, "admin", "alice")]


def test_a_member_cannot_delete_or_see_another_users_schedule_by_id(user, other_user):
    schedule = Schedule.objects.create(user=user, name="mine", cron="0 9 * * *", message="hi")
    bob = logged_in(other_user)
    assert bob.post(f"/schedules/{schedule.pk}/delete/").status_code == 404
    assert "mine" not in bob.get("/schedules/").content.decode()
    assert Schedule.objects.filter(pk=schedule.pk).exists()


def test_memory_is_not_readable_by_id_by_members_or_plain_staff(user, other_user, plain_staff):
    chunk = MemoryChunk.objects.create(user=user, content="Alice's salary is 1", source="chat")
    entry = CoreMemoryEntry.objects.create(user=user, section="user", key="pin", value="1234")
    for url in (
        f"/admin/platform/memorychunk/{chunk.pk}/change/",
        f"/admin/platform/corememoryentry/{entry.pk}/change/",
    ):
        response = logged_in(other_user).get(url)  # not staff: the admin's login page
        assert response.status_code == 302 and "/admin/login/" in response.url
        assert logged_in(plain_staff).get(url).status_code == 403


def test_the_memory_tools_read_only_the_callers_memory(user, other_user):
    from tests.tools.calls import ok, run_tool
    from tools_app.models import ToolCall

    ok(run_tool("memory_core_update", user=user, section="user", key="pin", value="1234"))
    assert "1234" not in str(ok(run_tool("memory_core_get", user=other_user)))
    crafted = run_tool("memory_core_get", user=other_user, user_id=user.pk)
    assert crafted.status == ToolCall.Status.FAILED  # no such argument: the schema says so


def test_a_screenshot_is_for_the_owner_and_auditors_only(secret, other_user, plain_staff, auditor):
    from tools_app.executors.browser.screenshots import media_dir
    from tools_app.models import Screenshot, ToolCall

    png = b"\x89PNG\r\n\x1a\n" + b"0" * 16
    media_dir().mkdir(parents=True, exist_ok=True)
    (media_dir() / f"privacy-{secret.pk}.png").write_bytes(png)
    call = ToolCall.objects.create(
        conversation=secret, user=secret.owner, tool="browser_screenshot", group="browser"
    )
    shot = Screenshot.objects.create(
        tool_call=call,
        conversation=secret,
        user=secret.owner,
        path=f"privacy-{secret.pk}.png",
        width=1,
        height=1,
        bytes=len(png),
    )
    path = f"/media/screenshots/{shot.pk}/"
    assert logged_in(other_user).get(path).status_code == 404
    assert logged_in(plain_staff).get(path).status_code == 404
    assert reads() == []
    assert logged_in(secret.owner).get(path).status_code == 200
    response = logged_in(auditor).get(path)
    assert response.status_code == 200 and b"".join(response.streaming_content) == png
    assert reads() == [("audrey", secret.pk, "screenshot", "alice")]
