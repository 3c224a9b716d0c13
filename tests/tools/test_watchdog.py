"""The watch over running calls (tools_app/services/watchdog.py): one thread per process for
every running call, and what it does for each: the running card first, live output, Stop
through the cancel flag, the deadline backstop, heartbeats.

The calls run in this process (``toolcall_execute`` in threads) with an activity double, so
the watch is the one under test in both modes (the database and the channel layer differ)."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.db import connection

from tests.helpers import wait_for
from tests.tools.conftest import EventTap
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.registry import override_activity
from tools_app.runtime import ActivityContext, BindContext
from tools_app.services import watchdog
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.execution import toolcall_cancel, toolcall_execute

pytestmark = pytest.mark.modes

Activity = Callable[[Any, ActivityContext], dict[str, Any]]


def bind(conversation: Any) -> ToolCall:
    call = toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(
            user_id=conversation.owner_id, conversation_id=conversation.pk, source="chat"
        ),
    )
    assert call.status == ToolCall.Status.QUEUED, call.error
    return call


@contextmanager
def running(calls: list[ToolCall], activity: Activity) -> Iterator[list[threading.Thread]]:
    """Execute ``calls`` in threads of this process (as a worker's pool does) with
    ``activity`` standing in for current_time; wait for them all on the way out."""

    def execute(call_id: int) -> None:
        try:
            toolcall_execute(tool_call_id=call_id)
        finally:
            connection.close()

    with override_activity("current_time", activity):
        threads = [
            threading.Thread(target=execute, args=(c.pk,), name=f"pool-{c.pk}") for c in calls
        ]
        for thread in threads:
            thread.start()
        try:
            yield threads
        finally:
            for thread in threads:
                thread.join(timeout=30)


def finished(call: ToolCall) -> ToolCall:
    return wait_for(
        lambda: ToolCall.objects.filter(pk=call.pk, status__in=ToolCall.TERMINAL).first(),
        message=f"call {call.pk} to finish",
    )


def test_one_thread_watches_every_running_call(conversation: Any) -> None:
    release = threading.Event()

    def wait_for_release(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        release.wait(10)
        return {"ok": True}

    calls = [bind(conversation) for _ in range(3)]
    with running(calls, wait_for_release):
        wait_for(lambda: len(watches()) == 3, message="three calls under watch")
        names = [t.name for t in threading.enumerate()]
        assert names.count("toolcall-watchdog") == 1, names
        assert not [n for n in names if re.fullmatch(r"toolcall-\d+", n)], names
        release.set()
    assert [finished(c).status for c in calls] == ["succeeded"] * 3


def test_the_running_card_comes_first_then_the_output_then_the_finished_card(
    conversation: Any,
) -> None:
    def talk(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        ctx.emit_output("one\n")
        time.sleep(0.35)
        ctx.emit_output("two\n")
        return {"ok": True}

    call = bind(conversation)
    with EventTap(f"conversation_{conversation.pk}") as tap, running([call], talk):
        finished(call)
        time.sleep(0.2)
    events = [e for _, e in sorted(tap.events, key=lambda te: te[0]) if e.get("id") == call.pk]
    kinds = [(e["type"], e.get("status")) for e in events]
    assert kinds[0] == ("toolcall", "running"), kinds
    assert kinds[-1] == ("toolcall", "succeeded"), kinds
    assert ("output", None) in kinds, kinds
    assert events[0]["version"] < events[-1]["version"]
    streamed = "".join(e["text"] for e in events if e["type"] == "output")
    assert streamed.startswith("one\n") and "one\ntwo\n".startswith(streamed)
    assert ToolCall.objects.get(pk=call.pk).output == "one\ntwo\n"  # all of it, on the row


def test_a_call_that_ends_at_once_goes_from_queued_straight_to_its_result(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No running card for a call shorter than ``ANNOUNCE_SECONDS``: nobody could see it."""
    monkeypatch.setattr(watchdog, "ANNOUNCE_SECONDS", 5.0)  # "at once", however slow the host
    call = bind(conversation)
    with EventTap(f"conversation_{conversation.pk}") as tap, running([call], lambda a, c: {}):
        finished(call)
        time.sleep(0.2)
    statuses = [e["status"] for e in tap.of_type("toolcall") if e["id"] == call.pk]
    assert statuses == ["succeeded"]


def test_the_running_card_comes_once_the_call_has_run_a_moment(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tools_app.services import execution

    started: list[float] = []
    announce_at: list[float] = []
    release = threading.Event()
    watch_call = execution.watch_call

    def watched(*args: Any) -> watchdog.Watch:
        watch = watch_call(*args)
        announce_at.append(watch.announce_at)
        return watch

    monkeypatch.setattr(execution, "watch_call", watched)

    def slow(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        started.append(time.monotonic())
        release.wait(10)
        return {}

    call = bind(conversation)
    with EventTap(f"conversation_{conversation.pk}") as tap, running([call], slow):
        wait_for(lambda: tap.of_type("toolcall"), message="the running card")
        release.set()
        finished(call)
        time.sleep(0.2)
    timed = [(t, e["status"]) for t, e in tap.timed("toolcall") if e["id"] == call.pk]
    assert [status for _, status in timed] == ["running", "succeeded"]
    shown_at = timed[0][0]
    # Not before ANNOUNCE_SECONDS from the watch's start (the call starts a moment after the
    # watch does), and about then (the watcher wakes for it); the call was running by then.
    assert started[0] < shown_at
    assert announce_at[0] <= shown_at < announce_at[0] + 1.0


def cooperative(seconds: float) -> Activity:
    """An activity that only stops when asked (it enforces no timeout of its own)."""

    def activity(args: Any, ctx: ActivityContext) -> dict[str, Any]:
        ctx.emit_output("started\n")
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            ctx.check_cancelled()
            time.sleep(0.02)
        return {"ok": True}

    return activity


def test_stop_reaches_a_running_activity_through_the_cancel_flag(conversation: Any) -> None:
    call = bind(conversation)
    with EventTap(f"conversation_{conversation.pk}") as tap, running([call], cooperative(20)):
        wait_for(lambda: tap.of_type("output"), message="the activity to start")
        started = time.monotonic()
        toolcall_cancel(ToolCall.objects.get(pk=call.pk))
        done = finished(call)
        elapsed = time.monotonic() - started
    assert done.status == ToolCall.Status.CANCELLED, done.error
    assert elapsed < 1.0, f"Stop took {elapsed:.2f} s"


def watches() -> list[watchdog.Watch]:
    with watchdog._supervisor._lock:
        return list(watchdog._supervisor._watches.values())


def test_the_deadline_stops_an_activity_that_overruns_its_timeout(conversation: Any) -> None:
    ToolGroupConfig.objects.create(name="time", settings={"timeout_seconds": 1})
    call = bind(conversation)
    started = time.monotonic()
    with running([call], cooperative(20)):
        done = finished(call)
    elapsed = time.monotonic() - started
    assert done.status == ToolCall.Status.FAILED and done.error == "timed out after 1 s"
    assert 1 + watchdog.TIMEOUT_GRACE_SECONDS <= elapsed < 1 + watchdog.TIMEOUT_GRACE_SECONDS + 2
    assert done.result["output"] == "started\n"


def test_heartbeats_and_output_are_stored_while_a_call_runs(
    conversation: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watchdog, "HEARTBEAT_SECONDS", 0.2)
    call = bind(conversation)
    with running([call], cooperative(1.5)):
        first = wait_for(
            lambda: ToolCall.objects.get(pk=call.pk).heartbeat_at, message="a heartbeat"
        )
        wait_for(
            lambda: ToolCall.objects.get(pk=call.pk).heartbeat_at > first,
            message="a later heartbeat",
        )
        running_call = ToolCall.objects.get(pk=call.pk)
        assert running_call.status == "running" and running_call.output == "started\n"
        finished(call)
    assert not watches()  # nothing left under watch
