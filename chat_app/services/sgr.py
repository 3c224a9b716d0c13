"""Schema-guided agents: what the Agent tools do to a turn, and which tools a round offers.

The agent loop calls in here through small marked hooks (``loop.py``, ``turns.py``):

- ``round_state`` (prepare): the tools this round offers, by the profile's kind and limits.
  ``sgr``: a round that follows anything but ``reasoning`` offers only ``reasoning`` and
  forces it (``tool_choice`` on native tool calling, an instruction in text fallback); the
  round after it offers the rest. Past ``max_iterations`` only ``final_answer`` and
  ``create_report`` are offered; ``clarification`` and ``web_search`` go when their counts
  are spent. What was taken away has a reason, and binding refuses a call to it with that
  reason (``RoundState.unavailable``; ``RoundState.bound`` keeps counting within a round).
- ``call_hold`` (dispatch, and approval when an admin made clarification require it): a
  bound ``clarification`` is not run; it waits for the person (call ``awaiting_input``, turn
  phase ``clarify``). ``clarification_answer`` (turn_start):
  the next message finishes it with the answer as its result, and the same turn goes on.
- ``turn_final`` (advance): a turn whose round called ``final_answer`` ends with its status,
  the answer shown as the assistant's last message.
- ``plan_apply`` (the plan activities): the plan lives on the turn (``Turn.plan``) and the
  chat's checklist follows it live (a ``plan`` event).

An *iteration* is a round that called something other than ``reasoning``, so in an ``sgr``
agent a forced reasoning round and the action after it count once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Count
from django.template.loader import render_to_string
from django.utils import timezone

from chat_app.events import message_publish, turn_publish
from chat_app.models import Agent, Conversation, Message, Turn
from infra.events import conversation_group, publish
from tools_app.models import ToolCall
from tools_app.registry import BaseTool

logger = logging.getLogger(__name__)

GROUP = "agent"
REASONING = "reasoning"
CLARIFICATION = "clarification"
FINAL_ANSWER = "final_answer"
SEARCH_TOOL = "web_search"  # counted by name: the research group provides it
FINAL_TOOLS = frozenset({FINAL_ANSWER, "create_report"})


# Always counted: the budget's words name them even without a limit (the model and the Agent
# cards read "clarifications" and "searches"). Any other tool is counted once the profile
# gives it a limit (Agent.tool_budgets), under its own name.
ALWAYS_COUNTED = (CLARIFICATION, SEARCH_TOOL)
LABELS = {CLARIFICATION: "clarifications", SEARCH_TOOL: "searches"}


@dataclass
class Budget:
    iterations: int
    max_iterations: int
    calls: dict[str, int]  # allowed calls of this turn, per counted tool
    limits: dict[str, int]  # the profile's tool budgets (a tool missing or 0: no limit)

    def as_dict(self) -> dict[str, str]:
        def of(used: int, limit: int) -> str:
            # Past the limit only the final tools run; they finish, they do not overspend.
            return f"{min(used, limit)} of {limit}" if limit else f"{used} (no limit)"

        words = {"iterations": of(self.iterations, self.max_iterations)}
        for tool, used in self.calls.items():
            words[LABELS.get(tool, tool)] = of(used, self.limits.get(tool, 0))
        return words

    @property
    def iterations_spent(self) -> bool:
        return bool(self.max_iterations) and self.iterations >= self.max_iterations

    def count(self, tool: str) -> str | None:
        """Count one more allowed call of ``tool``; why it is no longer available when that
        spent its limit."""
        if tool not in self.calls:
            return None
        self.calls[tool] += 1
        limit = self.limits.get(tool, 0)
        return spent_reason(tool, limit) if limit and self.calls[tool] >= limit else None


def spent_reason(tool: str, limit: int) -> str:
    if tool == CLARIFICATION:
        return (
            f"clarification is no longer available: {limit} clarifications were asked in "
            "this turn; go on with sensible assumptions"
        )
    if tool == SEARCH_TOOL:
        return (
            f"{tool} is no longer available: the search limit of {limit} for this turn is "
            "spent; work with what you found"
        )
    return (
        f"{tool} is no longer available: the limit of {limit} calls for this turn is spent; "
        "go on without it"
    )


def turn_budget(turn_id: int, agent: Agent) -> Budget:
    limits = {tool: limit for tool, limit in (agent.tool_budgets or {}).items() if limit}
    counted = [*ALWAYS_COUNTED, *sorted(set(limits) - set(ALWAYS_COUNTED))]
    calls = ToolCall.objects.filter(turn_id=turn_id)
    used = dict(
        calls.filter(policy_verdict="allowed", tool__in=counted)
        .order_by()  # no default ordering in the GROUP BY
        .values_list("tool")
        .annotate(n=Count("id"))
    )
    return Budget(
        iterations=calls.exclude(tool=REASONING).values("message_id").distinct().count(),
        max_iterations=agent.max_iterations,
        calls={tool: used.get(tool, 0) for tool in counted},
        limits=limits,
    )


@dataclass
class RoundState:
    """What one round offers, and why the rest is not offered (binding's refusals)."""

    tools: list[type[BaseTool]]
    budget: Budget
    tool_choice: str | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    note: str = ""

    def bound(self, call: ToolCall) -> None:
        """Count a call bound in this round, so a later call of the same round sees it."""
        if call.policy_verdict != "allowed":
            return
        spent = self.budget.count(call.tool)
        if spent:
            self.unavailable[call.tool] = spent
        if call.tool == CLARIFICATION:
            self.unavailable[CLARIFICATION] = (
                "one clarification at a time: wait for the user's answer to the first"
            )


def round_state(agent: Agent, turn: Turn, tools: list[type[BaseTool]]) -> RoundState:
    """The tools this round offers (a subset of ``tools``: enabled and allowed)."""
    if agent.kind == Agent.Kind.TOOL_CALLING and agent.all_tools:
        # Today's agents keep today's tools (the Agent group is for profiles that ask for
        # it) and today's cost: no budget queries on this hot path.
        return RoundState(
            tools=[t for t in tools if t.tool_group != GROUP], budget=Budget(0, 0, {}, {})
        )
    budget = turn_budget(turn.pk, agent)
    names = {t.tool_name for t in tools}
    unavailable: dict[str, str] = {}
    choice = None
    note = ""
    if budget.iterations_spent:
        reason = (
            f"the iteration limit of {budget.max_iterations} is reached: only final_answer "
            "and create_report are available now; finish the task with them"
        )
        unavailable = {n: reason for n in names - FINAL_TOOLS}
        note = f"The iteration limit is reached. {reason[0].upper()}{reason[1:]}."
    else:
        for tool, used in budget.calls.items():
            limit = budget.limits.get(tool, 0)
            if limit and used >= limit:
                unavailable[tool] = spent_reason(tool, limit)
        if agent.kind == Agent.Kind.SGR and REASONING in names:
            if _needs_reasoning(turn):
                reason = "this round you must call reasoning first; act in the next round"
                unavailable.update({n: reason for n in names - {REASONING}})
                choice = REASONING
                note = (
                    "This round, call only the `reasoning` tool: think about where the task "
                    "stands. You will act in the next round."
                )
            else:
                unavailable[REASONING] = "you have just reasoned: act on it now"
                note = (
                    "Act on your reasoning now: call the tool(s) it calls for "
                    "(final_answer when the task is done)."
                )
    offered = [t for t in tools if t.tool_name not in unavailable]
    words = ", ".join(f"{name} {value}" for name, value in budget.as_dict().items())
    note = f"{note}\nBudget of this turn: {words}.".strip()
    return RoundState(
        tools=offered, budget=budget, tool_choice=choice, unavailable=unavailable, note=note
    )


def _needs_reasoning(turn: Turn) -> bool:
    last = (
        Message.objects.filter(turn=turn, role=Message.Role.ASSISTANT)
        .exclude(state=Message.State.STREAMING)
        .order_by("-id")
        .first()
    )
    if last is None:
        return True
    return not last.tool_calls.filter(tool=REASONING, status=ToolCall.Status.SUCCEEDED).exists()


# --- clarification: pause and resume ------------------------------------------------------


def call_hold(call: ToolCall) -> bool:
    """True when the bound call waits for the person instead of running (clarification).

    Both steps or neither: the chat turn goes to phase ``clarify`` only if it is running, not
    stopped and between tools (or holding another question of the same round), and the call to
    ``awaiting_input`` only if it is still queued. Otherwise the call goes on as any other
    (dispatched, or cancelled by the Stop under way). The turn's row is updated first, so a
    Stop racing an approval is ordered by its lock: whichever comes second sees the other."""
    if call.tool != CLARIFICATION or call.turn_id is None:
        return False
    turn_id = call.turn_id
    with transaction.atomic():
        paused = Turn.objects.filter(
            pk=turn_id,
            status=Turn.Status.RUNNING,
            kind=Turn.Kind.CHAT,
            cancel_requested=False,
            phase__in=(Turn.Phase.TOOLS, Turn.Phase.CLARIFY),
        ).update(phase=Turn.Phase.CLARIFY)
        if not paused:
            return False
        if not ToolCall.objects.filter(pk=call.pk, status=ToolCall.Status.QUEUED).update(
            status=ToolCall.Status.AWAITING_INPUT
        ):
            transaction.set_rollback(True)  # the turn's phase too
            return False
    call.status = ToolCall.Status.AWAITING_INPUT
    # The page learns it may send again (the answer) once the binding transaction commits.
    transaction.on_commit(lambda: _turn_publish_by_id(turn_id))
    return True


def _turn_publish_by_id(turn_id: int) -> None:
    turn = Turn.objects.filter(pk=turn_id).first()
    if turn is not None:
        turn_publish(turn)


def clarification_waiting(conversation: Conversation) -> Turn | None:
    # At most one turn of a conversation runs: no ORDER BY needed (it costs on every message).
    waiting = conversation.turns.filter(status=Turn.Status.RUNNING, phase=Turn.Phase.CLARIFY)
    return next(iter(waiting.order_by()[:1]), None)


def clarification_answer(*, turn: Turn, text: str) -> bool:
    """The person answered: their message joins the turn, the waiting call finishes with the
    answer as its result and the turn goes on. False when the turn was not waiting."""
    from tools_app.services.execution import toolcall_finish

    with transaction.atomic():
        if not Turn.objects.filter(
            pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.CLARIFY
        ).update(phase=Turn.Phase.TOOLS, heartbeat_at=timezone.now()):
            return False
        message = Message.objects.create(
            conversation_id=turn.conversation_id, turn=turn, role=Message.Role.USER, content=text
        )
    message_publish(message, calls=[])
    for call in ToolCall.objects.filter(turn=turn, status=ToolCall.Status.AWAITING_INPUT):
        toolcall_finish(
            call,
            status=ToolCall.Status.SUCCEEDED,
            result={
                "success": True,
                "questions": (call.arguments or {}).get("questions"),
                "answer": text,
            },
            duration_ms=int((timezone.now() - call.created_at).total_seconds() * 1000),
            only_if=ToolCall.Status.AWAITING_INPUT,
        )
    turn.refresh_from_db()
    turn_publish(turn)
    return True


def clarification_stop(turn: Turn) -> None:
    """Stop while waiting for an answer: the question is withdrawn, the turn can finish."""
    from tools_app.services.execution import toolcall_finish

    Turn.objects.filter(pk=turn.pk, phase=Turn.Phase.CLARIFY).update(phase=Turn.Phase.TOOLS)
    reason = "cancelled by the user"
    for call in ToolCall.objects.filter(turn=turn, status=ToolCall.Status.AWAITING_INPUT):
        toolcall_finish(
            call,
            status=ToolCall.Status.CANCELLED,
            result={"success": False, "error": reason},
            error=reason,
            duration_ms=0,
            only_if=ToolCall.Status.AWAITING_INPUT,
        )


# --- final_answer: the end of the turn ---------------------------------------------------


def turn_final(
    turn: Turn,
    *,
    finish: Callable[..., object],
    calls: list[tuple[str, str]] | None = None,
) -> bool:
    """If the turn's tools included a successful final_answer, end the turn with its status
    (through ``finish``: the turn services' ``turn_finish``, passed in so this module does not
    import them back) and show its answer as the assistant's message. True when it did (or
    someone else did). ``calls``: the turn's calls as (status, tool) when the caller has them,
    which answers the common case ("no final_answer") without a query."""
    if calls is not None and (ToolCall.Status.SUCCEEDED, FINAL_ANSWER) not in calls:
        return False
    # Unordered, one column: an ORDER BY on ToolCall costs Django more than the query.
    finals = list(
        ToolCall.objects.filter(turn=turn, tool=FINAL_ANSWER, status=ToolCall.Status.SUCCEEDED)
        .order_by()
        .values_list("pk", flat=True)
    )
    if not finals:
        return False
    call = ToolCall.objects.get(pk=max(finals))
    if not Turn.objects.filter(
        pk=turn.pk, status=Turn.Status.RUNNING, phase=Turn.Phase.TOOLS
    ).update(phase=Turn.Phase.DONE):
        return True  # another finisher got here first
    result = call.result or {}
    arguments = call.arguments or {}
    status = result.get("status") or arguments.get("status") or "completed"
    message = Message.objects.create(
        conversation_id=turn.conversation_id,
        turn=turn,
        role=Message.Role.ASSISTANT,
        content=str(result.get("answer") or arguments.get("answer") or ""),
    )
    message_publish(message, calls=[])
    if turn.plan:  # the checklist says how it ended
        Turn.objects.filter(pk=turn.pk).update(plan={**turn.plan, "status": status})
        turn.refresh_from_db(fields=["plan"])
        plan_publish(turn)
    if status == "failed":
        finish(turn, status=Turn.Status.FAILED, error="the agent reported the task failed")
    else:
        finish(turn, status=Turn.Status.SUCCEEDED)
    return True


# --- the plan, kept on the turn ----------------------------------------------------------


def plan_apply(*, call_id: int, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Store the new plan on the call's turn (when it has one) and publish the checklist."""
    call = ToolCall.objects.filter(pk=call_id).only("turn_id").first()
    turn = Turn.objects.filter(pk=call.turn_id).first() if call and call.turn_id else None
    plan: dict[str, Any] = dict(turn.plan) if turn and turn.plan else {}
    done = set(args.get("done_steps") or [])
    plan["steps"] = [
        {"text": text, "done": i in done} for i, text in enumerate(args["steps"], start=1)
    ]
    if args.get("goal"):
        plan["goal"] = args["goal"]
    plan["reasoning"] = args.get("reasoning", "")
    if tool == "adapt_plan":
        plan.setdefault("changes", []).append(
            {
                "changes": args.get("changes", []),
                "reasoning": args.get("reasoning", ""),
                "at": timezone.now().isoformat(timespec="seconds"),
            }
        )
    plan["version"] = int(plan.get("version", 0)) + 1
    if turn is not None:
        Turn.objects.filter(pk=turn.pk).update(plan=plan)
        turn.plan = plan
        plan_publish(turn)
    return plan


def plan_html(turn: Turn | None, budget: Budget | None = None) -> str:
    if turn is None or not turn.plan:
        return ""
    return render_to_string(
        "chat/_plan.html",
        {"turn": turn, "plan": turn.plan, "budget": budget.as_dict() if budget else None},
    )


def plan_publish(turn: Turn) -> None:
    from chat_app.services.agents import agent_for_conversation

    agent = agent_for_conversation(Conversation.objects.get(pk=turn.conversation_id))
    publish(
        [conversation_group(turn.conversation_id)],
        {
            "type": "plan",
            "turn_id": turn.pk,
            "version": turn.plan.get("version", 0),
            "html": plan_html(turn, turn_budget(turn.pk, agent)),
        },
    )


def latest_plan_html(conversation: Conversation) -> str:
    turn = conversation.turns.order_by("-id").first()
    if turn is None or not turn.plan:
        return ""
    from chat_app.services.agents import agent_for_conversation

    return plan_html(turn, turn_budget(turn.pk, agent_for_conversation(conversation)))


def budget_for_call(call_id: int) -> dict[str, str] | None:
    """The turn's budget as words ("3 of 10"), for the Agent tools' results and cards; the
    plan checklist (which shows it too) is refreshed on the way."""
    from chat_app.services.agents import agent_for_conversation

    call = ToolCall.objects.filter(pk=call_id).select_related("conversation", "turn").first()
    if call is None or call.turn is None or call.conversation is None:
        return None
    budget = turn_budget(call.turn.pk, agent_for_conversation(call.conversation))
    if call.turn.plan and call.tool not in ("generate_plan", "adapt_plan"):
        publish(
            [conversation_group(call.conversation.pk)],
            {
                "type": "plan",
                "turn_id": call.turn.pk,
                "version": call.turn.plan.get("version", 0),
                "html": plan_html(call.turn, budget),
            },
        )
    return budget.as_dict()


def researcher_ensure() -> Agent:
    """The shipped "Researcher" profile (the data migration creates it; tests and a
    flushed database call this)."""
    from chat_app.agent_profiles import RESEARCHER

    values = {k: v for k, v in RESEARCHER.items() if k != "name"}
    agent, _ = Agent.objects.get_or_create(name=RESEARCHER["name"], defaults=values)
    return agent
