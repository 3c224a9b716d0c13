"""Schedules: added, listed and removed through the real binding; invalid cron expressions,
duplicate names and the quota are clear errors; a due schedule fires exactly once (claimed in
the database) as a turn of its owner, from a beat started after it was stored (a restart), and
the scripted model's answer lands in the target conversation. The clock is never waited on:
due times are set in the past, or ``now`` is given."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from chat_app.models import Conversation, Message, Turn
from platform_app.models import Schedule
from platform_app.schedules import cron_next, schedules_fire_due
from tests.helpers import wait_for
from tests.llm_server import Reply
from tests.tools.calls import ok, run_tool
from tests.tools.conftest import configure

pytestmark = [pytest.mark.django_db(transaction=True)]


def add(user, conversation_id=None, **args):
    args.setdefault("message", "Say good morning.")
    return run_tool("schedule_add", user=user, conversation_id=conversation_id, **args)


@pytest.mark.modes
def test_it_adds_lists_and_removes_a_schedule(user, conversation):
    added = ok(add(user, conversation.pk, name="briefing", cron="0 9 * * 1-5"))
    assert added["added"] is True
    schedule = added["schedule"]
    assert schedule["explained"] == "At 09:00 on Monday through Friday"
    assert schedule["inject_into"] is None and schedule["runs"] == 0
    stored = Schedule.objects.get(user=user, name="briefing")
    assert stored.next_run_at > timezone.now()
    assert stored.next_run_at.astimezone(UTC).hour == 9
    listed = ok(run_tool("schedule_list", user=user, conversation_id=conversation.pk))
    assert listed["count"] == 1 and listed["schedules"][0]["cron"] == "0 9 * * 1-5"
    removed = ok(run_tool("schedule_remove", user=user, name="briefing"))
    assert removed["removed"] is True and not Schedule.objects.exists()


@pytest.mark.parametrize(
    "cron,problem",
    [
        ("61 * * * *", "Bad minute"),
        ("* * *", "Wrong number of fields"),
        ("every morning", "Wrong number of fields"),
        ("0 0 31 2 *", "Bad day-of-month"),
    ],
)
def test_an_invalid_cron_expression_is_a_clear_error(user, cron, problem):
    call = add(user, name="bad", cron=cron)
    assert call.status == "failed"
    assert call.error.startswith("invalid arguments for schedule_add: 'cron'")
    assert f"invalid cron expression {cron!r}: {problem}" in call.error
    assert "minute hour day-of-month month day-of-week" in call.error
    assert call.result["success"] is False and not Schedule.objects.exists()


def test_aliases_are_accepted_and_stored_as_five_fields(user):
    result = ok(add(user, name="nightly", cron="@daily"))
    assert result["schedule"]["cron"] == "0 0 * * *"


@pytest.mark.modes
def test_a_duplicate_name_is_a_clear_error(user, other_user):
    ok(add(user, name="briefing", cron="0 9 * * *"))
    call = add(user, name="briefing", cron="0 10 * * *")
    assert call.status == "failed"
    assert call.error == (
        "a schedule named 'briefing' already exists; pick another name, or remove it first "
        "with schedule_remove"
    )
    ok(add(other_user, name="briefing", cron="0 9 * * *"))  # names are per user
    assert Schedule.objects.get(user=user).cron == "0 9 * * *"


@pytest.mark.modes
def test_the_quota_per_user_is_enforced(user, other_user):
    configure("schedules", max_per_user=2)
    ok(add(user, name="one", cron="0 9 * * *"))
    ok(add(user, name="two", cron="0 10 * * *"))
    call = add(user, name="three", cron="0 11 * * *")
    assert call.status == "denied"
    assert call.error == (
        "policy: you have 2 schedule(s); the limit is 2 per user — remove one with "
        "schedule_remove first"
    )
    ok(add(other_user, name="three", cron="0 11 * * *"))


def test_the_minimum_interval_setting_refuses_frequent_schedules(user):
    configure("schedules", min_interval_minutes=60)
    call = add(user, name="often", cron="*/10 * * * *")
    assert call.status == "denied"
    assert "fires every 10 minute(s); the shortest interval allowed is 60 minutes" in call.error


def test_removing_an_unknown_schedule_is_an_error(user):
    ok(add(user, name="kept", cron="0 9 * * *"))
    call = run_tool("schedule_remove", user=user, name="gone")
    assert call.status == "failed"
    assert call.error == "there is no schedule named 'gone' (schedules: 'kept')"


def test_inject_into_must_be_one_of_the_users_conversations(user, other_user):
    theirs = Conversation.objects.create(owner=other_user, title="Bob's")
    call = add(user, name="sneaky", cron="0 9 * * *", inject_into=theirs.pk)
    assert call.status == "denied"
    assert call.error == f"policy: conversation {theirs.pk} is not one of your conversations"


def test_a_cron_is_read_in_the_configured_time_zone(user):
    configure("schedules", timezone="Europe/Berlin")
    ok(add(user, name="berlin", cron="0 9 * * *"))
    stored = Schedule.objects.get(name="berlin")
    assert stored.timezone == "Europe/Berlin"
    after = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)  # summer: UTC+2
    assert cron_next("0 9 * * *", tz="Europe/Berlin", after=after) == datetime(
        2026, 7, 2, 7, 0, tzinfo=UTC
    )


@pytest.mark.modes
def test_a_due_schedule_fires_once_however_many_ticks_race(worker, user, conversation):
    # A slash command as the message: the fired turn runs without a model.
    ok(
        add(
            user,
            conversation.pk,
            name="clock",
            cron="0 9 * * *",
            message='/current_time {"timezone": "UTC"}',
            inject_into=conversation.pk,
        )
    )
    schedule = Schedule.objects.get(name="clock")
    now = schedule.next_run_at + timedelta(seconds=5)  # the frozen clock: just past due
    barrier = threading.Barrier(4)
    fired: list[int] = []

    def tick() -> None:
        barrier.wait()
        try:
            fired.append(schedules_fire_due(now=now))
        finally:
            from django.db import connection

            connection.close()

    threads = [threading.Thread(target=tick) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(fired) == 1
    schedule.refresh_from_db()
    assert schedule.run_count == 1 and schedule.last_run_at == now
    assert schedule.next_run_at == now.replace(hour=9, minute=0, second=0) + timedelta(days=1)
    turn = wait_for(lambda: Turn.objects.filter(conversation=conversation).first())
    wait_for(lambda: not Turn.objects.get(pk=turn.pk).is_running, message="the fired turn")
    assert Turn.objects.get(pk=turn.pk).status == "succeeded"
    assert schedule.last_turn_id == turn.pk
    fired_message = Message.objects.get(turn=turn, role="user")
    assert fired_message.origin == "schedule"
    assert schedules_fire_due(now=now) == 0  # the same due time never fires again


@pytest.mark.modes
def test_it_survives_a_restart_and_beat_fires_it_with_the_models_answer(
    user, conversation, llm, provider, worker, request
):
    # Stored before any beat runs: a beat started afterwards (a fresh process in distributed
    # mode) finds it in the database.
    ok(
        add(
            user,
            conversation.pk,
            name="briefing",
            cron="30 7 * * *",
            message="Give me the morning briefing.",
            inject_into=conversation.pk,
        )
    )
    Schedule.objects.filter(name="briefing").update(
        next_run_at=timezone.now() - timedelta(minutes=1)  # accelerated clock: already due
    )
    llm.script(Reply(text="Good morning! Nothing is on fire."))
    request.getfixturevalue("fast_beat")
    answer = wait_for(
        lambda: Message.objects.filter(
            conversation=conversation, role="assistant", content="Good morning! Nothing is on fire."
        ).first(),
        timeout=30,
        message="the fired schedule's answer",
    )
    turn = Turn.objects.get(pk=answer.turn_id)
    wait_for(lambda: not Turn.objects.get(pk=turn.pk).is_running, message="the turn to end")
    assert turn.user_id == user.pk
    asked = Message.objects.get(turn=turn, role="user")
    assert asked.content == "Give me the morning briefing." and asked.origin == "schedule"
    assert llm.requests[0]["messages"][-1]["content"] == "Give me the morning briefing."
    schedule = Schedule.objects.get(name="briefing")
    assert schedule.run_count == 1 and schedule.last_turn_id == turn.pk
    assert schedule.next_run_at > timezone.now()
    assert (schedule.next_run_at.hour, schedule.next_run_at.minute) == (7, 30)


@pytest.mark.modes
def test_without_inject_into_each_firing_gets_a_new_conversation(worker, user, conversation):
    ok(
        add(
            user,
            conversation.pk,
            name="fresh",
            cron="*/5 * * * *",
            message='/current_time {"timezone": "UTC"}',
        )
    )
    schedule = Schedule.objects.get(name="fresh")
    assert schedules_fire_due(now=schedule.next_run_at) == 1
    schedule.refresh_from_db()
    assert schedules_fire_due(now=schedule.next_run_at) == 1
    fired = Conversation.objects.filter(owner=user, title__startswith="Schedule fresh · ")
    assert fired.count() == 2
    assert not Turn.objects.filter(conversation=conversation).exists()


def test_a_busy_target_conversation_skips_the_firing_with_a_notice(user, conversation):
    Turn.objects.create(conversation=conversation, user=user)  # still running
    Schedule.objects.create(
        user=user,
        name="busy",
        cron="* * * * *",
        message="hello",
        inject_into=conversation,
        next_run_at=timezone.now() - timedelta(seconds=1),
    )
    assert schedules_fire_due() == 1
    schedule = Schedule.objects.get(name="busy")
    assert schedule.last_status == "skipped"
    assert "the agent is still working on the previous message" in schedule.last_error
    notice = Message.objects.get(conversation=conversation, role="notice")
    assert notice.content.startswith("Schedule “busy” was due but was skipped")


def test_a_disabled_schedule_does_not_fire(user):
    Schedule.objects.create(
        user=user,
        name="off",
        cron="* * * * *",
        message="hello",
        enabled=False,
        next_run_at=timezone.now() - timedelta(minutes=5),
    )
    assert schedules_fire_due() == 0
    assert not Turn.objects.exists()


def test_the_chat_sidebar_lists_schedules_and_removes_one(client, user, conversation):
    ok(add(user, conversation.pk, name="sidebar-one", cron="0 9 * * *"))
    client.force_login(user)
    html = client.get(f"/c/{conversation.pk}/").content.decode()
    assert 'id="schedule-list"' in html and ">sidebar-one<" in html and "0 9 * * *" in html
    schedule = Schedule.objects.get(name="sidebar-one")
    response = client.post(f"/schedules/{schedule.pk}/delete/", HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "sidebar-one" not in response.content.decode()
    assert not Schedule.objects.exists()


def test_another_user_cannot_remove_my_schedule_from_the_sidebar(client, user, other_user):
    ok(add(user, name="mine", cron="0 9 * * *"))
    client.force_login(other_user)
    client.post(f"/schedules/{Schedule.objects.get().pk}/delete/")
    assert Schedule.objects.filter(name="mine").exists()


def test_cron_next_is_computed_from_the_given_clock():
    after = datetime(2026, 1, 1, 12, 3, tzinfo=UTC)
    assert cron_next("*/5 * * * *", tz="UTC", after=after) == datetime(
        2026, 1, 1, 12, 5, tzinfo=UTC
    )


def _admin_form(schedule: Schedule, **changes: object) -> dict[str, object]:
    data: dict[str, object] = {
        "user": schedule.user_id,
        "name": schedule.name,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "message": schedule.message,
        "model": schedule.model,
        "inject_into": schedule.inject_into_id or "",
        "agent": schedule.agent_id or "",
        "enabled": "on" if schedule.enabled else "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v != "" or k in ("model", "inject_into", "agent")}


def test_an_admin_edits_a_schedule_and_its_next_run_follows(client, staff_user, user):
    ok(add(user, name="edited", cron="0 9 * * *"))
    schedule = Schedule.objects.get(name="edited")
    client.force_login(staff_user)
    url = f"/admin/platform/schedule/{schedule.pk}/change/"
    response = client.post(url, _admin_form(schedule, cron="61 * * * *"))
    assert response.status_code == 200
    assert "invalid cron expression &#x27;61 * * * *&#x27;: Bad minute" in response.content.decode()
    response = client.post(url, _admin_form(schedule, cron="30 18 * * *"))
    assert response.status_code == 302, response.content.decode()[:2000]
    schedule.refresh_from_db()
    assert schedule.cron == "30 18 * * *"
    assert (schedule.next_run_at.hour, schedule.next_run_at.minute) == (18, 30)
    assert "edited" in client.get("/admin/platform/schedule/").content.decode()


def test_the_tools_manager_says_whether_beat_ticks(db):
    from platform_app.executors.schedules.settings import schedules_status
    from platform_app.models import BeatTick
    from platform_app.tasks import schedules_tick

    state, label, detail = schedules_status(None)
    assert state == "bad" and label.endswith("no tick yet")
    schedules_tick()  # what beat sends: fires what is due, then notes the tick
    state, label, detail = schedules_status(None)
    assert state == "ok" and label.endswith("every 15 s") and detail.startswith("last tick ")
    BeatTick.objects.update(at=timezone.now() - timedelta(minutes=5))
    state, label, detail = schedules_status(None)
    assert state == "bad" and "no tick for 300 s" in label
    assert "schedules do not fire" in detail
