"""The self-service pages (issue 23, part 5): My memory, My schedules, My reports. Each is
owner-only: another person's memory entry, core entry, schedule or report by id answers 404,
exactly as a missing one, and changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from chat_app.models import Conversation
from platform_app.memory.services import memory_core_update, memory_save
from platform_app.models import CoreMemoryEntry, MemoryChunk, Schedule
from platform_app.self_service import ScheduleInvalid, cron_preview
from tests.security.test_report_quota import clear, report, reports_dir
from tests.tools.calls import ok

pytestmark = [pytest.mark.django_db(transaction=True)]


class _MemorySettings:
    pass


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _remember(user: Any, text: str) -> MemoryChunk:
    memory_save(user_id=user.pk, content=text, source="test", settings=_MemorySettings())
    return MemoryChunk.objects.filter(user=user).order_by("-pk").first()  # type: ignore[return-value]


def _schedule(user: Any, name: str = "standup", **fields: Any) -> Schedule:
    return Schedule.objects.create(
        user=user,
        name=name,
        cron=fields.pop("cron", "0 9 * * 1-5"),
        message=fields.pop("message", "What is on today?"),
        next_run_at=datetime(2030, 1, 1, tzinfo=UTC),
        **fields,
    )


# --- My memory ------------------------------------------------------------------------------


def test_my_memory_lists_searches_reads_and_deletes(user: Any, other_user: Any) -> None:
    kept = _remember(user, "The staging database lives on db-staging-7.")
    gone = _remember(user, "Lunch is at noon on Fridays.")
    _remember(other_user, "The staging password is hunter2.")
    memory_core_update(
        user_id=user.pk, section="user", key="name", value="Ada", settings=_MemorySettings()
    )
    client = _client(user)

    page = client.get("/memory/").content.decode()
    assert "db-staging-7" in page and "Lunch is at noon" in page and "Ada" in page
    assert "hunter2" not in page
    found = client.get("/memory/", {"q": "staging"}).content.decode()
    assert "db-staging-7" in found and "Lunch" not in found and "hunter2" not in found
    assert "db-staging-7" in client.get(f"/memory/{kept.pk}/").content.decode()

    response = client.post(f"/memory/{gone.pk}/delete/")
    assert response.status_code == 302
    assert not MemoryChunk.objects.filter(pk=gone.pk).exists()
    core = CoreMemoryEntry.objects.get(user=user)
    assert client.post(f"/memory/core/{core.pk}/delete/").status_code == 302
    assert not CoreMemoryEntry.objects.filter(pk=core.pk).exists()


def test_another_persons_memory_is_not_found(user: Any, other_user: Any) -> None:
    theirs = _remember(other_user, "The staging password is hunter2.")
    memory_core_update(
        user_id=other_user.pk, section="user", key="pin", value="4711", settings=_MemorySettings()
    )
    core = CoreMemoryEntry.objects.get(user=other_user)
    client = _client(user)

    assert client.get(f"/memory/{theirs.pk}/").status_code == 404
    assert client.post(f"/memory/{theirs.pk}/delete/").status_code == 404
    assert client.post(f"/memory/core/{core.pk}/delete/").status_code == 404
    assert client.get(f"/memory/{theirs.pk + 1000}/").status_code == 404  # the same answer
    assert MemoryChunk.objects.filter(pk=theirs.pk).exists()
    assert CoreMemoryEntry.objects.filter(pk=core.pk).exists()


def test_the_pages_need_a_login() -> None:
    for url in ("/memory/", "/schedules/", "/reports/", "/schedules/preview/?cron=@daily"):
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


# --- My schedules ---------------------------------------------------------------------------


def test_schedules_opened_directly_is_a_full_page(user: Any) -> None:
    _schedule(user)
    client = _client(user)
    page = client.get("/schedules/").content.decode()
    assert page.lstrip().lower().startswith("<!doctype html>"), page[:200]
    assert "<h1>My schedules</h1>" in page and "standup" in page
    # the chat page's sidebar still gets its fragment
    fragment = client.get("/schedules/", HTTP_HX_REQUEST="true").content.decode()
    assert 'id="schedule-list"' in fragment and "<html" not in fragment


def test_create_edit_pause_resume_and_delete_a_schedule(user: Any) -> None:
    client = _client(user)
    form = {"name": "digest", "cron": "30 8 * * *", "timezone": "UTC", "message": "News?"}
    response = client.post("/schedules/new/", {**form, "enabled": "on"})
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule = Schedule.objects.get(user=user, name="digest")
    assert schedule.enabled and schedule.next_run_at is not None
    assert (schedule.next_run_at.hour, schedule.next_run_at.minute) == (8, 30)

    edit = f"/schedules/{schedule.pk}/"
    assert "digest" in client.get(edit).content.decode()
    response = client.post(edit, {**form, "cron": "0 18 * * 5", "name": "weekly", "enabled": "on"})
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.name, schedule.cron) == ("weekly", "0 18 * * 5")
    assert schedule.next_run_at is not None and schedule.next_run_at.weekday() == 4

    client.post(f"/schedules/{schedule.pk}/pause/", {"paused": "1"})
    schedule.refresh_from_db()
    assert not schedule.enabled
    assert "paused" in client.get("/schedules/").content.decode()
    client.post(f"/schedules/{schedule.pk}/pause/", {"paused": "0"})
    schedule.refresh_from_db()
    assert schedule.enabled

    response = client.post(f"/schedules/{schedule.pk}/delete/", {"from": "page"})
    assert response.status_code == 302 and response["Location"] == "/schedules/"
    assert not Schedule.objects.filter(pk=schedule.pk).exists()


def test_a_bad_schedule_is_refused_with_the_reason_and_kept_in_the_form(user: Any) -> None:
    client = _client(user)
    response = client.post(
        "/schedules/new/",
        {"name": "bad", "cron": "61 * * * *", "timezone": "UTC", "message": "hello there"},
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert "invalid cron expression" in page and "hello there" in page
    assert not Schedule.objects.filter(user=user).exists()
    _schedule(user, name="taken")
    response = client.post(
        "/schedules/new/", {"name": "taken", "cron": "@daily", "timezone": "UTC", "message": "x"}
    )
    assert response.status_code == 400 and "already exists" in response.content.decode()


def test_another_persons_schedule_is_not_found(user: Any, other_user: Any) -> None:
    theirs = _schedule(other_user, name="theirs")
    client = _client(user)
    form = {
        "name": "mine now",
        "cron": "@daily",
        "timezone": "UTC",
        "message": "x",
        "enabled": "on",
    }

    assert client.get(f"/schedules/{theirs.pk}/").status_code == 404
    assert client.post(f"/schedules/{theirs.pk}/", form).status_code == 404
    assert client.post(f"/schedules/{theirs.pk}/pause/", {"paused": "1"}).status_code == 404
    assert client.post(f"/schedules/{theirs.pk}/delete/", {"from": "page"}).status_code == 404
    theirs.refresh_from_db()
    assert (theirs.name, theirs.enabled) == ("theirs", True)
    assert "theirs" not in client.get("/schedules/").content.decode()


def test_the_cron_preview_shows_the_next_five_runs(user: Any) -> None:
    after = datetime(2030, 1, 1, 10, 0, tzinfo=UTC)  # a Tuesday
    times = cron_preview("0 9 * * 1-5", tz="UTC", now=after)
    assert [t.strftime("%a %d %H:%M") for t in times] == [
        "Wed 02 09:00",
        "Thu 03 09:00",
        "Fri 04 09:00",
        "Mon 07 09:00",
        "Tue 08 09:00",
    ]
    berlin = cron_preview("@daily", tz="Europe/Berlin", now=after)
    assert [t.utcoffset().total_seconds() for t in berlin] == [3600.0] * 5  # type: ignore[union-attr]
    with pytest.raises(ScheduleInvalid, match="Wrong number of fields"):
        cron_preview("* * * *")

    client = _client(user)
    fragment = client.get("/schedules/preview/", {"cron": "*/15 * * * *"}).content.decode()
    assert fragment.count("<li>") == 5 and "Every 15th minute" in fragment
    bad = client.get("/schedules/preview/", {"cron": "soon"}).content.decode()
    assert 'role="alert"' in bad and "invalid cron expression" in bad


# --- My reports -----------------------------------------------------------------------------


@pytest.fixture
def two_conversations(user: Any, other_user: Any) -> Any:
    made = [
        Conversation.objects.create(owner=user, title="Market study"),
        Conversation.objects.create(owner=other_user, title="Their secrets"),
    ]
    for conversation in made:
        clear(reports_dir(conversation))
    yield made
    for conversation in made:
        clear(reports_dir(conversation))


def test_my_reports_lists_mine_across_conversations_only(
    user: Any, other_user: Any, two_conversations: list[Conversation]
) -> None:
    mine, theirs = two_conversations
    ok(report(user, mine))
    ok(report(other_user, theirs))
    my_name = next(reports_dir(mine).iterdir()).name
    their_name = next(reports_dir(theirs).iterdir()).name
    client = _client(user)

    page = client.get("/reports/").content.decode()
    assert my_name in page and "Market study" in page
    assert "Their secrets" not in page
    download = client.get(f"/c/{mine.pk}/reports/{my_name}")
    assert download.status_code == 200 and b"# Report" in b"".join(download)
    assert client.get(f"/c/{theirs.pk}/reports/{their_name}").status_code == 404
