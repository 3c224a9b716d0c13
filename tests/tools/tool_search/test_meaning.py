"""tool_search ranks by meaning too (the local all-MiniLM-L6-v2, as memory search): a query that
shares no word with a tool finds it when it means the same ("clock" → ``current_time``); the
group's switch turns it off; nonsense finds nothing; it never reaches past the person's
grants; and a model that names only tools it cannot load gets the best matches instead."""

from __future__ import annotations

import pytest

from chat_app.models import Turn
from chat_app.services.tool_offer import tools_search
from platform_app.memory.similarity import local_similarity
from tests.llm_server import Call, Reply
from tests.tools.calls import ok, run_tool
from tests.tools.tool_search.test_prompt_budget import fresh_install_grants
from tests.tools.tool_search.test_tool_search import names, run
from tools_app.models import ToolCall, ToolGroupConfig
from tools_app.registry import TOOLS
from tools_app.services.grants import granted_tools

pytestmark = [pytest.mark.tool_search]


def found(result: dict) -> list[str]:
    return [f["name"] for f in result["found"]]


def test_a_word_it_does_not_share_finds_the_tool_by_meaning(transactional_db, user):
    fresh_install_grants()
    result = ok(run_tool("tool_search", user=user, query="clock"))
    assert found(result)[0] == "current_time", result


def test_by_words_only_when_the_group_says_so(transactional_db, user):
    fresh_install_grants()
    ToolGroupConfig.objects.update_or_create(
        name="tool_search", defaults={"settings": {"match_by_meaning": False}}
    )
    result = ok(run_tool("tool_search", user=user, query="clock"))
    assert "current_time" not in found(result)


@pytest.mark.parametrize("query", ["test.com/a/b", "hello", "zzqx 1234"])
def test_nonsense_finds_nothing_by_meaning(query):
    tools = [TOOLS[n] for n in ("current_time", "memory_search", "skill_load", "docs_search")]
    assert tools_search(tools, query, limit=8, similar=local_similarity) == []


def test_meaning_ranks_only_the_tools_it_is_given(transactional_db, user):
    # "run a shell command" means shell_exec; a member without it gets what they may use.
    fresh_install_grants()
    granted = granted_tools(user.pk)
    assert granted is not None and "shell_exec" not in granted
    result = ok(run_tool("tool_search", user=user, query="run a shell command in a terminal"))
    assert set(found(result)) | set(result["loaded"]) <= granted


@pytest.mark.modes  # through the loop and the worker: both modes
def test_names_it_cannot_load_give_the_best_matches_instead(
    worker, conversation, user, llm, provider
):
    # SmolLM2 asked for load=["defaultOptions"] with a query about a clock (issue 38).
    fresh_install_grants()
    llm.script(
        Reply(calls=[Call("tool_search", {"query": "Find a clock", "load": ["defaultOptions"]})]),
        Reply(calls=[Call("current_time", {"timezone": "UTC"})]),
        Reply(text="It is noon."),
    )
    turn = run(conversation, user, "what does the clock say?")
    assert turn.status == Turn.Status.SUCCEEDED
    search, clock = ToolCall.objects.filter(turn=turn).order_by("pk")
    assert search.result is not None
    assert search.result["loaded"] == ["current_time"]
    assert search.result["not_available"] == ["defaultOptions"]
    assert "current_time" in names(llm.requests[1]) and "current_time" not in names(llm.requests[0])
    assert clock.status == "succeeded"


def test_the_vectors_of_the_tools_are_kept_between_searches():
    texts = ["current time: Return the current date and time.", "memory search: Recall."]
    first = local_similarity("clock", texts)
    assert local_similarity("clock", texts) == first
    assert first[0] > first[1]


def test_without_the_model_it_ranks_by_words(monkeypatch):
    from platform_app.memory import minilm

    def missing() -> None:
        raise minilm.ModelMissing("the local embedding model is not installed")

    monkeypatch.setattr(minilm, "get_model", missing)
    tools = [TOOLS[n] for n in ("current_time", "memory_search")]
    assert tools_search(tools, "clock", limit=8, similar=local_similarity) == []
    assert [f.name for f in tools_search(tools, "time", limit=8, similar=local_similarity)] == [
        "current_time"
    ]
