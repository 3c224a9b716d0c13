"""Schema-guided agents end to end, over the real wire protocols (native OpenAI, Anthropic,
and the text fallback): clarification pauses the turn and the answer resumes it, the plan is
kept on the turn, reports are written, final_answer ends the turn; limits narrow what a round
offers and binding refuses what was taken away."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat_app.agent_kinds import clarification, kind_for
from chat_app.models import Agent, Message, Provider, Turn
from chat_app.services.agents import researcher_ensure
from chat_app.services.turns import turn_start, turn_stop
from tests.conftest import wait_turn
from tests.helpers import wait_for
from tests.llm_server import Call, Reply
from tools_app.models import AuditRecord, ToolCall, ToolFunctionConfig
from tools_app.runtime import workspace_dir_for, workspace_id_for
from tools_app.services.approval import toolcall_approve

pytestmark = [pytest.mark.modes]

PROTOCOLS = ["openai", "anthropic", "fallback"]
TOOLS = [
    "reasoning",
    "generate_plan",
    "adapt_plan",
    "clarification",
    "final_answer",
    "create_report",
    "current_time",
]


def think(step: str) -> Call:
    return Call(
        "reasoning",
        {
            "reasoning_steps": [f"Where I am: {step}.", "What I need next."],
            "current_situation": step,
            "plan_status": "on track",
            "enough_data": False,
            "remaining_steps": ["continue"],
            "task_completed": False,
        },
    )


CLARIFY = Call(
    "clarification",
    {
        "reasoning": "'Jaguar' is ambiguous.",
        "unclear_terms": ["Jaguar"],
        "assumptions": ["The car maker.", "Sales in 2025."],
        "questions": ["Do you mean the car maker or the animal?"],
    },
)
PLAN = Call(
    "generate_plan",
    {
        "reasoning": "Two facts to collect.",
        "research_goal": "Report on Jaguar cars",
        "planned_steps": ["Check the date", "Find the sales", "Write the report"],
        "search_strategies": ["The maker's own figures", "Recent news"],
    },
)
ADAPT = Call(
    "adapt_plan",
    {
        "reasoning": "The date is known.",
        "original_goal": "Report on Jaguar cars",
        "new_goal": "Report on Jaguar cars",
        "plan_changes": ["Date checked"],
        "next_steps": ["Find the sales", "Write the report"],
        "done_steps": [1],
    },
)
REPORT_TEXT = "# Jaguar cars\n\nJaguar makes cars [1].\n\n## Sources\n[1] https://jaguar.example\n"
REPORT = Call(
    "create_report",
    {
        "reasoning": "Enough to write.",
        "title": "Jaguar cars",
        "user_request_language_reference": "tell me about jaguar",
        "content": REPORT_TEXT,
        "confidence": "medium",
    },
)
FINAL = Call(
    "final_answer",
    {
        "reasoning": "Report written.",
        "completed_steps": ["Asked what Jaguar means", "Wrote the report"],
        "answer": "Jaguar is a car maker; the report has the details.",
        "status": "completed",
    },
)


def reply(protocol: str, *calls: Call) -> Reply:
    if protocol != "fallback":
        return Reply(calls=list(calls))
    blocks = [
        "```json\n" + json.dumps({"tool": c.name, "arguments": c.arguments}) + "\n```"
        for c in calls
    ]
    return Reply(text="\n".join(blocks))


def use(provider: Provider, llm: Any, protocol: str) -> None:
    if protocol == "anthropic":
        provider.kind = Provider.Kind.ANTHROPIC
        provider.base_url = llm.anthropic_base_url
    elif protocol == "fallback":
        provider.native_tools = Provider.NativeTools.FALSE
    provider.save()


def profile(conversation, **values: Any) -> Agent:
    agent = researcher_ensure()
    for key, value in {"tools": TOOLS, **values}.items():
        setattr(agent, key, value)
    agent.full_clean()
    agent.save()
    conversation.agent = agent
    conversation.save()
    return agent


def offered(request: dict[str, Any]) -> set[str]:
    """The tool names a request offered (native), or that its fallback prompt lists."""
    if "tools" in request:
        return {t.get("name") or t["function"]["name"] for t in request["tools"]}
    system = request.get("system") or request["messages"][0]["content"]
    return {line[3:].strip() for line in system.splitlines() if line.startswith("## ")}


def forced(request: dict[str, Any]) -> str | None:
    choice = request.get("tool_choice")
    if not choice:
        return None
    return choice.get("name") or choice["function"]["name"]


def waiting(turn_id: int) -> Turn:
    def paused() -> Turn | None:
        turn = Turn.objects.get(pk=turn_id)
        return turn if turn.phase == Turn.Phase.CLARIFY or not turn.is_running else None

    return wait_for(paused, timeout=20, message="the turn to wait for clarification")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_research_turn_clarifies_plans_reports_and_finishes(
    worker, conversation, user, llm, provider, protocol
):
    use(provider, llm, protocol)
    profile(conversation)
    llm.script(
        reply(protocol, think("the request is ambiguous")),
        reply(protocol, CLARIFY),
    )
    turn = turn_start(conversation=conversation, user_id=user.pk, text="Tell me about jaguar")
    turn = waiting(turn.pk)
    assert turn.is_running and turn.phase == Turn.Phase.CLARIFY
    question = ToolCall.objects.get(turn=turn, tool="clarification")
    assert question.status == ToolCall.Status.AWAITING_INPUT
    first, second = llm.requests
    assert offered(first) == {"reasoning"}  # sgr: reasoning first, forced
    if protocol == "fallback":
        assert "call only the `reasoning` tool" in first["messages"][0]["content"]
    else:
        assert forced(first) == "reasoning"
    assert "reasoning" not in offered(second) and "clarification" in offered(second)
    assert forced(second) is None

    llm.script(
        reply(protocol, think("it is the car maker")),
        reply(protocol, PLAN),
        reply(protocol, think("plan made")),
        reply(protocol, Call("current_time", {"timezone": "UTC"}), ADAPT),
        reply(protocol, think("date known")),
        reply(protocol, REPORT),
        reply(protocol, think("report written")),
        reply(protocol, FINAL),
    )
    resumed = turn_start(conversation=conversation, user_id=user.pk, text="The car maker")
    assert resumed is not None and resumed.pk == turn.pk  # the same turn goes on
    turn = wait_turn(turn.pk, timeout=60)

    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    question.refresh_from_db()
    assert question.status == "succeeded" and question.result["answer"] == "The car maker"
    assert "The car maker" in json.dumps(llm.requests[2]["messages"])  # the answer reached it
    assert len(llm.requests) == 10
    calls = list(ToolCall.objects.filter(turn=turn).order_by("id"))
    assert [c.tool for c in calls] == [
        "reasoning", "clarification", "reasoning", "generate_plan", "reasoning",
        "current_time", "adapt_plan", "reasoning", "create_report", "reasoning", "final_answer",
    ]  # fmt: skip
    assert all(c.status == "succeeded" for c in calls), [(c.tool, c.error) for c in calls]
    assert turn.plan["goal"] == "Report on Jaguar cars"
    assert [s["done"] for s in turn.plan["steps"]] == [True, False, False]
    assert turn.plan["changes"][0]["changes"] == ["Date checked"]
    result = calls[8].result
    workspace = workspace_dir_for(workspace_id_for(conversation_id=conversation.pk, user_id=None))
    assert (workspace / result["path"]).read_text() == REPORT_TEXT
    assert result["sources_count"] == 1 and result["budget"]["iterations"].endswith("of 10")
    last = Message.objects.filter(turn=turn).order_by("-id").first()
    assert last is not None and last.role == "assistant"
    assert last.content == "Jaguar is a car maker; the report has the details."
    user_messages = Message.objects.filter(turn=turn, role="user").values_list("content", flat=True)
    assert list(user_messages) == ["Tell me about jaguar", "The car maker"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_at_the_iteration_limit_only_the_final_tools_are_offered(
    worker, conversation, user, llm, provider, protocol
):
    use(provider, llm, protocol)
    profile(conversation, kind=Agent.Kind.REASONING_AS_TOOL, max_iterations=2, max_rounds=6)
    now = Call("current_time", {"timezone": "UTC"})
    llm.script(
        reply(protocol, now),
        reply(protocol, think("one call done"), now),
        # A confused model calls a tool that was taken away: binding refuses it.
        reply(protocol, now),
        reply(protocol, REPORT, FINAL),
    )
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="go").pk)

    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    assert len(llm.requests) == 4
    assert {"current_time", "reasoning", "clarification"} <= offered(llm.requests[1])
    for late in llm.requests[2:]:
        assert offered(late) == {"final_answer", "create_report"}
    refused = ToolCall.objects.filter(turn=turn, tool="current_time").order_by("id").last()
    assert refused is not None and refused.status == "denied"
    assert refused.error == (
        "tool 'current_time' is not available now: the iteration limit of 2 is reached: only "
        "final_answer and create_report are available now; finish the task with them"
    )
    assert refused.error in json.dumps(llm.requests[3]["messages"])  # the model read why
    final = ToolCall.objects.get(turn=turn, tool="final_answer")
    assert final.result["budget"]["iterations"] == "2 of 2"


@pytest.mark.parametrize("protocol", ["openai", "fallback"])
def test_clarification_is_withdrawn_at_its_limit_and_refused_in_binding(
    worker, conversation, user, llm, provider, protocol
):
    use(provider, llm, protocol)
    profile(conversation, kind=Agent.Kind.REASONING_AS_TOOL, tool_budgets={"clarification": 1})
    llm.script(reply(protocol, CLARIFY))
    turn = waiting(turn_start(conversation=conversation, user_id=user.pk, text="jaguar?").pk)
    assert turn.phase == Turn.Phase.CLARIFY
    llm.script(reply(protocol, CLARIFY), reply(protocol, FINAL))
    turn_start(conversation=conversation, user_id=user.pk, text="the animal")
    turn = wait_turn(turn.pk)

    assert turn.status == Turn.Status.SUCCEEDED
    assert "clarification" in offered(llm.requests[0])
    assert "clarification" not in offered(llm.requests[1])
    second = ToolCall.objects.filter(turn=turn, tool="clarification").order_by("id").last()
    assert second is not None and second.status == "denied"
    assert "clarification is no longer available: 1 clarifications" in second.error


def test_stop_withdraws_a_waiting_question(worker, conversation, user, llm, provider):
    profile(conversation, kind=Agent.Kind.REASONING_AS_TOOL)
    llm.script(Reply(calls=[CLARIFY]))
    turn = waiting(turn_start(conversation=conversation, user_id=user.pk, text="jaguar?").pk)
    turn_stop(turn=turn)
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.CANCELLED
    assert ToolCall.objects.get(turn=turn).status == "cancelled"
    # The next message starts a new turn rather than answering the withdrawn question.
    llm.script(Reply(text="Hello."))
    new = turn_start(conversation=conversation, user_id=user.pk, text="hi")
    assert new is not None and new.pk != turn.pk


def question_awaiting_approval(conversation, user, llm) -> tuple[Turn, ToolCall]:
    """A turn whose clarification waits for approval (an admin made it require one)."""
    profile(conversation, kind=Agent.Kind.REASONING_AS_TOOL)
    ToolFunctionConfig.objects.create(name="clarification", approval_mode="requester")
    llm.script(Reply(calls=[CLARIFY]))
    turn = turn_start(conversation=conversation, user_id=user.pk, text="jaguar?")
    question = wait_for(
        lambda: ToolCall.objects.filter(turn=turn, status="awaiting_approval").first(),
        timeout=20,
        message="the clarification to await approval",
    )
    return turn, question


def test_an_approved_clarification_waits_for_the_answer(worker, conversation, user, llm, provider):
    # An admin made clarification require approval: once approved it pauses the turn for the
    # person's answer, as it does without approval, instead of running on a worker.
    turn, question = question_awaiting_approval(conversation, user, llm)
    toolcall_approve(call=question, user=user)
    turn = waiting(turn.pk)
    assert turn.is_running and turn.phase == Turn.Phase.CLARIFY
    question.refresh_from_db()
    assert question.status == ToolCall.Status.AWAITING_INPUT

    llm.script(Reply(text="The car maker it is."))
    resumed = turn_start(conversation=conversation, user_id=user.pk, text="The car maker")
    assert resumed is not None and resumed.pk == turn.pk
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.SUCCEEDED, turn.error
    question.refresh_from_db()
    assert question.status == "succeeded" and question.result["answer"] == "The car maker"
    assert "The car maker" in json.dumps(llm.requests[-1]["messages"])
    kinds = AuditRecord.objects.filter(tool_call=question).values_list("kind", flat=True)
    assert sorted(kinds) == ["approval", "call"]


def test_an_approval_landing_in_the_middle_of_stop_does_not_hold_the_turn(
    worker, conversation, user, llm, provider, monkeypatch
):
    # Stop has withdrawn the questions waiting for an answer and is about to cancel the rest
    # when the approval lands: the turn is stopping, so the question must not pause it.
    turn, question = question_awaiting_approval(conversation, user, llm)
    withdraw = clarification.clarification_withdraw

    def approved_meanwhile(stopping: Turn) -> None:
        withdraw(stopping)
        toolcall_approve(call=question, user=user)

    monkeypatch.setattr(clarification, "clarification_withdraw", approved_meanwhile)
    turn_stop(turn=turn)
    turn = wait_turn(turn.pk)
    assert turn.status == Turn.Status.CANCELLED and turn.phase == Turn.Phase.DONE
    question.refresh_from_db()
    # Cancelled while queued, or (if a worker took it first) refused there: never waiting.
    assert question.status in ("cancelled", "failed")


def test_final_answer_with_status_failed_fails_the_turn(worker, conversation, user, llm, provider):
    profile(conversation, kind=Agent.Kind.REASONING_AS_TOOL)
    failed = Call("final_answer", {**FINAL.arguments, "status": "failed", "answer": "No luck."})  # type: ignore[dict-item]
    llm.script(Reply(calls=[failed]))
    turn = wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="x").pk)
    assert turn.status == Turn.Status.FAILED
    assert Message.objects.filter(turn=turn, role="assistant").last().content == "No luck."


def test_general_agents_are_not_offered_the_agent_tools(worker, conversation, user, llm, provider):
    llm.script(Reply(text="Hi."))
    wait_turn(turn_start(conversation=conversation, user_id=user.pk, text="hi").pk)
    assert not offered(llm.requests[0]) & set(TOOLS[:-1])


def test_searches_are_counted_by_name_and_refused_when_spent(conversation, user):
    from tools_app.models import ToolGroupConfig
    from tools_app.registry import BaseTool, get_tool, unregister_tool
    from tools_app.runtime import BindContext
    from tools_app.services.binding import CallRequest, toolcall_bind

    WebSearch = get_tool("web_search")  # the research group's, where it is installed
    standin = WebSearch is None
    if WebSearch is None:

        class WebSearch(BaseTool, group="time", name="web_search"):  # type: ignore[no-redef]
            """A stand-in for the research group's search tool (binding only)."""

            query: str

    else:
        ToolGroupConfig.objects.update_or_create(
            name=WebSearch.tool_group, defaults={"enabled": True}
        )
    try:
        agent = profile(
            conversation, kind=Agent.Kind.REASONING_AS_TOOL, tool_budgets={"web_search": 2}
        )
        turn = Turn.objects.create(conversation=conversation, user=user)
        tools = [WebSearch]
        state = kind_for(agent).offer(turn, tools)
        assert [t.tool_name for t in state.tools] == ["web_search"]
        ctx = BindContext(user_id=user.pk, conversation_id=conversation.pk, source="chat")
        statuses = []
        for i in range(3):
            call = toolcall_bind(
                request=CallRequest(tool="web_search", arguments={"query": f"q{i}"}, index=i),
                ctx=ctx,
                turn_id=turn.pk,
                allowed_tools=["web_search"],
                unavailable=state.unavailable,
            )
            state.bound(call)
            statuses.append(call.status)
        assert statuses == ["queued", "queued", "denied"]
        assert "the search limit of 2 for this turn is spent" in call.error
        assert kind_for(agent).offer(turn, tools).tools == []  # next round: not offered
    finally:
        if standin:
            unregister_tool("web_search")
        ToolCall.objects.filter(tool="web_search").delete()


def test_the_profile_checks_rounds_leave_room_after_the_iterations(db):
    agent = researcher_ensure()
    assert agent.kind == "sgr" and agent.max_iterations == 10
    agent.max_rounds = 15
    with pytest.raises(Exception, match="must be above 20"):
        agent.full_clean()
