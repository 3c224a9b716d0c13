"""The Agent tools' activities. They run in the worker like any tool (audit, card, Test
button); what they mean for the turn is ``chat_app.agent_kinds``' part."""

from __future__ import annotations

from typing import Any

from chat_app.agent_kinds import budget_for_call, plan_apply
from platform_app import reports
from platform_app.executors.agent.settings import AgentToolSettings
from platform_app.executors.agent.tools import (
    AdaptPlan,
    Clarification,
    CreateReport,
    FinalAnswer,
    GeneratePlan,
    Reasoning,
)
from platform_app.safe_files import Missing, Refused
from tools_app.errors import PolicyDenied, ToolError
from tools_app.executors.research.sources import sources_of_turn
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


def _budget(ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    budget = budget_for_call(ctx.call_id)
    return {"budget": budget} if budget else {}


@activity("reasoning")
def reasoning(args: Reasoning, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    return {**args.model_dump(mode="json"), **_budget(ctx)}


def _without_reasoning(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan as the seed returns it: no ``reasoning``, at the top or in a change. The
    turn keeps it for the checklist; the model wrote it and need not read it again."""
    shown = {key: value for key, value in plan.items() if key != "reasoning"}
    if "changes" in shown:
        shown["changes"] = [
            {key: value for key, value in change.items() if key != "reasoning"}
            for change in shown["changes"]
        ]
    return shown


@activity("generate_plan")
def generate_plan(args: GeneratePlan, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    plan = plan_apply(call_id=ctx.call_id, tool="generate_plan", args=args.model_dump())
    # The seed's result: the plan without the reasoning (the card and the trace keep that).
    return {
        "research_goal": args.research_goal,
        "planned_steps": args.planned_steps,
        "search_strategies": args.search_strategies,
        "plan": _without_reasoning(plan),
        **_budget(ctx),
    }


@activity("adapt_plan")
def adapt_plan(args: AdaptPlan, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    plan = plan_apply(call_id=ctx.call_id, tool="adapt_plan", args=args.model_dump())
    return {
        "original_goal": args.original_goal,
        "new_goal": args.new_goal,
        "plan_changes": args.plan_changes,
        "next_steps": args.next_steps,
        "plan": _without_reasoning(plan),
        **_budget(ctx),
    }


@activity("clarification")
def clarification(args: Clarification, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    # In a chat turn the loop holds this call for the person's answer and it never runs;
    # here it was called outside a turn (Test button, API, MCP): nobody can answer.
    raise ToolError(
        "clarification needs a chat turn to pause; outside one nobody can answer",
        data={"questions": args.questions},
    )


@activity("final_answer")
def final_answer(args: FinalAnswer, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    return {
        "status": args.status,
        "answer": args.answer,
        "completed_steps": args.completed_steps,
        **_budget(ctx),
    }


@activity("create_report")
def create_report(args: CreateReport, ctx: ActivityContext[AgentToolSettings]) -> dict[str, Any]:
    settings = ctx.settings
    # The turn's numbered sources (web_search, extract_page_content) become its source list.
    cited = reports.report_with_sources(args.content, sources_of_turn(ctx.turn_id))
    try:
        report = reports.report_write(
            workspace=ctx.workspace_dir,
            folder=settings.reports_folder,
            title=args.title,
            content=cited.content,
            max_bytes=settings.max_report_bytes,
        )
    except Refused as exc:
        raise PolicyDenied(str(exc)) from None
    except Missing as exc:
        raise ToolError(str(exc)) from None
    ctx.emit_output(f"wrote {settings.reports_folder}/{report.name} ({report.size:,} bytes)\n")
    extra: dict[str, Any] = {}
    if cited.sources:
        extra["sources"] = cited.sources
    if cited.unknown:
        extra["unknown_citations"] = cited.unknown
        extra["notice"] = (
            "the report cites "
            + ", ".join(f"[{n}]" for n in cited.unknown)
            + ", which no research tool of this turn numbered"
        )
    return {
        "title": report.title,
        "file_name": report.name,
        "path": f"{settings.reports_folder}/{report.name}",
        "word_count": report.words,
        "sources_count": report.sources,
        "size_bytes": report.size,
        "confidence": args.confidence,
        "timestamp": report.timestamp,
        "conversation_id": ctx.conversation_id,
        **extra,
        **_budget(ctx),
    }
