"""camelCase argument names (seed 002: ``startLine``, ``maxLines``, ``topK``, ``injectInto``,
``chatId``) bind as the snake_case fields the schemas show; the model sees snake_case only."""

from __future__ import annotations

from typing import Any

import pytest

from tests.tools.calls import ok, run_tool
from tools_app.registry import TOOLS, get_tool
from tools_app.runtime import BindContext
from tools_app.services.binding import CallRequest, toolcall_bind

pytestmark = pytest.mark.django_db(transaction=True)

# Every tool and camelCase argument seed 002 names, with the rest of a valid call.
SEED_NAMES: list[tuple[str, dict[str, Any], str]] = [
    ("file_read", {"path": "notes/todo.md", "startLine": 3, "maxLines": 2}, "start_line"),
    ("file_read", {"path": "notes/todo.md", "maxLines": 2}, "max_lines"),
    ("memory_search", {"query": "staging", "topK": 3}, "top_k"),
    ("docs_search", {"query": "approval", "topK": 2}, "top_k"),
    (
        "schedule_add",
        {"name": "n", "cron": "0 9 * * *", "message": "hi", "injectInto": 1},
        "inject_into",
    ),
    ("subagent_spawn", {"name": "n", "message": "hi", "injectInto": "parent"}, "inject_into"),
    ("send_message", {"channel": "conversation", "chatId": "1", "text": "hi"}, "chat_id"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), SEED_NAMES)
def test_it_validates_the_seeds_camel_case_names(tool, arguments, field):
    validated = get_tool(tool).model_validate(arguments)
    camel = next(
        k
        for k in arguments
        if k.replace("I", "_i").replace("L", "_l").replace("K", "_k").lower() == field
    )
    assert getattr(validated, field) == arguments[camel]


@pytest.mark.parametrize(("tool", "arguments", "field"), SEED_NAMES)
def test_it_binds_camel_case_through_the_one_path(tool, arguments, field, staff_user):
    call = toolcall_bind(
        request=CallRequest(tool=tool, arguments=arguments),
        ctx=BindContext(user_id=staff_user.pk, conversation_id=None, source="api"),
    )
    # Whatever policy then says, the schema took the camelCase name, and the record has ours.
    assert "unexpected" not in (call.error or "") and "startLine" not in (call.error or "")
    assert field in call.arguments, (call.status, call.error)


def test_it_runs_memory_search_with_top_k_in_camel_case(user):
    for n in range(3):
        ok(run_tool("memory_save", user=user, content=f"the staging server is box {n}"))
    found = ok(run_tool("memory_search", user=user, query="staging server", topK=1))
    assert len(found["results"]) == 1


def test_both_spellings_at_once_are_refused(user):
    call = run_tool("memory_search", user=user, query="x", topK=1, top_k=2)
    assert call.status == "failed" and "topK" in call.error


def test_an_unknown_camel_case_name_is_still_refused(user):
    call = run_tool("memory_search", user=user, query="x", topN=1)
    assert call.status == "failed" and "topN" in call.error


def test_the_model_is_shown_snake_case_only():
    for tool in TOOLS.values():
        properties = tool.openai_schema()["function"]["parameters"].get("properties", {})
        assert not [name for name in properties if name != name.lower() and "_" not in name], (
            tool.tool_name
        )
