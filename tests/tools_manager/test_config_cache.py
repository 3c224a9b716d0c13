"""Tool configuration is cached per process and checked against ToolConfigVersion on every
read: an admin's change, made however and in whichever process, applies to the next call."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from chat_app.services.turns import turn_start
from tests.conftest import ROOT, child_env, wait_turn
from tests.llm_server import Call, Reply
from tools_app import selectors
from tools_app.executors.shell.settings import ShellSettings
from tools_app.models import ToolCall, ToolConfigVersion, ToolFunctionConfig, ToolGroupConfig
from tools_app.registry import get_tool
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind
from tools_app.services.settings import function_approval_set, group_enabled_set

pytestmark = pytest.mark.modes  # SQLite and Postgres alike

CURRENT_TIME = get_tool("current_time")


@pytest.fixture(autouse=True)
def version_row(django_db_blocker: Any) -> None:
    """The row the migration creates; a transactional test's flush removes it (and without
    it nothing is cached: every read goes to the database)."""
    with django_db_blocker.unblock():
        ToolConfigVersion.objects.update_or_create(pk=1, defaults={"token": "start"})


def bind(user: Any) -> ToolCall:
    return toolcall_bind(
        request=CallRequest(tool="current_time", arguments={"timezone": "UTC"}),
        ctx=BindContext(user_id=user.pk, conversation_id=None, source="api"),
    )


def test_it_asks_the_database_one_small_question_while_nothing_changes(db: None) -> None:
    ToolGroupConfig.objects.create(name="time", settings={"timeout_seconds": 7})
    selectors.enabled_tools()  # read once (also the imported sources' stamp: the token moved)
    with CaptureQueriesContext(connection) as queries:
        state = selectors.tool_state(CURRENT_TIME)
        settings = selectors.group_settings("time")
        selectors.enabled_tools()
    sqls = [q["sql"] for q in queries.captured_queries]
    # One small question each time: the token, nothing else.
    assert len(sqls) == 3 and len(set(sqls)) == 1
    assert sqls[0] == 'SELECT "token" FROM "tools_app_toolconfigversion" WHERE "id" = 1'
    assert state.settings.timeout_seconds == settings.timeout_seconds == 7


def test_it_sees_changes_saved_through_the_tools_manager(user: Any) -> None:
    assert bind(user).status == ToolCall.Status.QUEUED
    group_enabled_set(user=user, group="time", enabled=False)
    refused = bind(user)
    assert refused.status == ToolCall.Status.DENIED and "switched off" in refused.error
    group_enabled_set(user=user, group="time", enabled=True)
    function_approval_set(user=user, tool="current_time", mode="requester")
    assert bind(user).status == ToolCall.Status.AWAITING_APPROVAL
    leads = Group.objects.create(name="leads")
    function_approval_set(
        user=user, tool="current_time", mode="approver", approver_group_ids=[leads.pk]
    )
    call = bind(user)
    assert (call.approval_mode, call.approver_group_ids) == ("approver", [leads.pk])
    leads.delete()  # gone with its group: the configuration moves on
    assert bind(user).approver_group_ids == []


def test_it_sees_bulk_writes_that_skip_save(db: None) -> None:
    ToolGroupConfig.objects.create(name="time")
    assert selectors.group_enabled("time")
    ToolGroupConfig.objects.filter(name="time").update(enabled=False)
    assert not selectors.group_enabled("time")
    ToolGroupConfig.objects.filter(name="time").delete()
    assert selectors.group_enabled("time")
    ToolFunctionConfig.objects.bulk_create([ToolFunctionConfig(name="current_time", enabled=False)])
    assert selectors.tool_disabled_reason(CURRENT_TIME) == (
        "tool 'current_time' is disabled by an administrator"
    )
    config = ToolFunctionConfig.objects.get(name="current_time")
    config.enabled = True
    ToolFunctionConfig.objects.bulk_update([config], ["enabled"])
    assert selectors.tool_disabled_reason(CURRENT_TIME) is None


def test_a_rolled_back_change_leaves_no_stale_copy(db: None) -> None:
    ToolGroupConfig.objects.create(name="time", settings={"timeout_seconds": 7})
    with pytest.raises(RuntimeError), transaction.atomic():
        ToolGroupConfig.objects.filter(name="time").update(settings={"timeout_seconds": 9})
        assert selectors.group_settings("time").timeout_seconds == 9  # cached under its token
        raise RuntimeError("roll it back")
    assert selectors.group_settings("time").timeout_seconds == 7


def test_without_a_version_row_it_reads_the_configuration_every_time(db: None) -> None:
    ToolGroupConfig.objects.create(name="time")
    ToolConfigVersion.objects.all().delete()  # as a test run's flush leaves it
    assert selectors.group_enabled("time")
    with connection.cursor() as cursor:  # not even through the ORM
        cursor.execute('UPDATE "tools_app_toolgroupconfig" SET enabled = %s', [False])
    assert not selectors.group_enabled("time")
    ToolGroupConfig.objects.filter(name="time").update(enabled=True)
    assert ToolConfigVersion.objects.exists()  # the next write brings it back
    assert selectors.group_enabled("time")


def test_every_reader_gets_its_own_settings(db: None) -> None:
    ToolGroupConfig.objects.create(name="shell", settings={"blocked_commands": ["rm"]})
    first = selectors.group_settings("shell", ShellSettings)
    first.blocked_commands.append("curl")
    first.timeout_seconds = 1
    second = selectors.group_settings("shell", ShellSettings)
    assert second is not first
    assert second.blocked_commands == ["rm"]
    assert second.timeout_seconds != 1


def test_a_change_made_by_another_process_applies_to_the_next_call(
    transactional_db: None, user: Any
) -> None:
    assert bind(user).status == ToolCall.Status.QUEUED  # this process has it cached now
    script = (
        "import django; django.setup()\n"
        "from tools_app.models import ToolGroupConfig\n"
        "ToolGroupConfig.objects.update_or_create(name='time', defaults={'enabled': False})\n"
    )
    subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=child_env(DJANGO_SETTINGS_MODULE="controlcenter.settings"),
        check=True,
        timeout=60,
    )
    refused = bind(user)
    assert refused.status == ToolCall.Status.DENIED and "switched off" in refused.error


@pytest.mark.modes
def test_a_worker_binds_with_the_configuration_as_just_changed(
    worker: str, conversation: Any, user: Any, llm: Any, provider: Any
) -> None:
    """The agent loop binds in the worker (a process of its own in distributed mode)."""
    ToolGroupConfig.objects.create(name="time")
    for expected in ("succeeded", "denied"):
        llm.script(Reply(calls=[Call("current_time", {"timezone": "UTC"})]), Reply(text="ok"))
        turn = turn_start(conversation=conversation, user_id=user.pk, text="time?")
        assert turn is not None
        wait_turn(turn.pk)
        assert ToolCall.objects.get(turn=turn).status == expected
        # A write that skips save() and its signals, as a script or the shell might do.
        ToolGroupConfig.objects.filter(name="time").update(enabled=False)
