"""The Researcher profile (schema-guided agent, issue 11) with the research group's real
web_search against a local SearXNG-speaking server: its tool budget counts it by name."""

from __future__ import annotations

import pytest

from chat_app.models import Agent, Conversation, Turn
from chat_app.services.agents import researcher_ensure
from chat_app.services.turns import turn_start
from tests.conftest import wait_turn
from tests.integration.test_sgr import FINAL, offered
from tests.llm_server import Call, Reply
from tools_app.models import ToolCall

from .conftest import use_searxng
from .servers import Server

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_researcher_searches_until_its_search_limit(
    worker, user, llm, provider, searxng: Server
):
    use_searxng(user, searxng)
    searxng.results = [("Jaguar cars", "https://jaguar.example/", "Jaguar makes cars.")]
    agent = researcher_ensure()
    agent.kind = Agent.Kind.REASONING_AS_TOOL
    agent.tool_budgets = {**agent.tool_budgets, "web_search": 2}
    agent.save()
    conversation = Conversation.objects.create(owner=user, agent=agent)
    search = [Call("web_search", {"query": f"jaguar {i}", "max_results": 3}) for i in range(3)]
    llm.script(Reply(calls=search), Reply(calls=[FINAL]))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="jaguar").pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    calls = list(ToolCall.objects.filter(turn=turn, tool="web_search").order_by("index"))
    statuses = [c.status for c in calls]
    assert statuses == ["succeeded", "succeeded", "denied"], [c.error for c in calls]
    assert "search limit of 2" in calls[2].error
    assert len(searxng.hits) == 2
    assert "web_search" in offered(llm.requests[0])
    assert "web_search" not in offered(llm.requests[1])
    final = ToolCall.objects.get(turn=turn, tool="final_answer")
    assert final.result["budget"]["searches"] == "2 of 2"
