"""The platform tool groups in the Tools Manager: a row with a status, a Test page for every
function, Test runs through the real path (binding, queue, worker), and an unknown tool is an
error result, not a crash."""

from __future__ import annotations

import json
import shutil

import pytest
from django.conf import settings

from tests.helpers import wait_for
from tests.tools.calls import run_tool
from tests.tools_manager.conftest import HTMX
from tools_app.models import ToolCall
from tools_app.registry import GROUPS

PLATFORM_GROUPS = ["memory", "docs", "skills", "messaging", "schedules", "subagents"]


def finished(call_id: int) -> ToolCall:
    return wait_for(
        lambda: (
            ToolCall.objects.filter(pk=call_id).exclude(status__in=["queued", "running"]).first()
        ),
        timeout=20,
        message=f"tool call {call_id} to finish",
    )


def test_each_group_has_a_row_with_its_status(staff_client):
    html = staff_client.get("/tools/").content.decode()
    for group in PLATFORM_GROUPS:
        assert f'id="group-{group}"' in html
    assert "local all-MiniLM-L6-v2" in html  # Memory: hybrid search by default
    assert "beat in-process" in html or "celery beat" in html  # Schedules: who ticks
    for fn in ("memory_save", "docs_read", "skill_load", "send_message", "schedule_add"):
        assert f'href="/tools/functions/{fn}/test/"' in html


@pytest.mark.parametrize(
    "tool", sorted(t.tool_name for g in PLATFORM_GROUPS for t in GROUPS[g].tools)
)
def test_every_function_has_a_test_page(staff_client, tool):
    response = staff_client.get(f"/tools/functions/{tool}/test/")
    assert response.status_code == 200 and "Run test" in response.content.decode()


@pytest.fixture
def data_skill():
    folder = settings.SKILLS_DIR / "button-skill"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text("---\nname: buttons\ndescription: Press.\n---\nPress it.\n")
    yield
    shutil.rmtree(folder)


RUNS = [
    ("memory_save", {"content": "The Test button saved this."}, "saved_chunks", 1),
    ("memory_core_update", {"section": "agent", "key": "mood", "value": "calm"}, "value", "calm"),
    ("memory_core_get", {}, "agent", {}),
    ("docs_search", {"query": "slash commands", "top_k": 1}, "count", 1),
    ("docs_read", {"path": "docs/ADDING_TOOLS.md#The checklist"}, "heading", "The checklist"),
    ("skill_list", {}, "count", None),
    ("skill_load", {"name": "buttons"}, "instructions", "Press it.\n"),
    ("schedule_add", {"name": "tested", "cron": "0 9 * * *", "message": "hi"}, "added", True),
    ("schedule_list", {}, "count", 0),
    ("subagent_spawn", {"name": "tested", "message": "hi"}, "status", "started"),
]


@pytest.mark.modes
@pytest.mark.parametrize("tool,arguments,key,expected", RUNS, ids=[r[0] for r in RUNS])
def test_a_test_run_goes_through_the_worker(
    worker, staff_client, data_skill, tool, arguments, key, expected
):
    raw = json.dumps(arguments)
    staff_client.post(f"/tools/functions/{tool}/test/", {"arg-raw_json__": raw}, **HTMX)
    call = finished(ToolCall.objects.get(tool=tool).pk)
    assert call.status == "succeeded", call.error
    assert call.source == "test" and call.worker
    if expected is not None:
        assert call.result[key] == expected
    else:
        assert call.result[key] >= 1


@pytest.mark.django_db(transaction=True)
def test_an_unknown_tool_is_an_error_result(user):
    call = run_tool("memory_forget", user=user, everything=True)
    assert call.status == "failed"
    assert call.result["success"] is False
    assert call.error.startswith("unknown tool 'memory_forget'; available tools: ")
    assert "memory_save" in call.error
