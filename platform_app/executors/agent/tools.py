"""The Agent tools' schemas. Names, fields and bounds are a contract (issue 11, after the
"SGR Deep Research" tool set): prompts and other agents rely on them."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, model_validator

from platform_app.executors.agent.settings import AgentToolSettings
from platform_app.reports import report_quota_check
from platform_app.safe_files import Refused
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext

Step = Annotated[str, Field(min_length=1, max_length=300)]
Short = Annotated[str, Field(min_length=1, max_length=200)]


class Reasoning(BaseTool[AgentToolSettings], group="agent"):
    """Think before you act: where the task stands and what to do next. In an sgr agent you
    call this first in every round; it changes nothing in the world."""

    reasoning_steps: list[Step] = Field(
        min_length=2,
        max_length=3,
        description="Your reasoning, 2-3 short steps.",
        examples=[["The user wants X.", "I know Y but not Z yet."]],
    )
    current_situation: str = Field(
        max_length=300,
        description="Where the task stands now (at most 300 characters).",
        examples=["Two sources found; the third is missing."],
    )
    plan_status: str = Field(
        max_length=150,
        description="How the plan is going (at most 150 characters).",
        examples=["Step 2 of 4 done."],
    )
    enough_data: bool = Field(False, description="Whether you have enough data to answer.")
    remaining_steps: list[Step] = Field(
        min_length=1,
        max_length=3,
        description="What is left to do next, 1-3 steps.",
        examples=[["Search for Z."]],
    )
    task_completed: bool = Field(description="Whether the task is done.", examples=[False])


class GeneratePlan(BaseTool[AgentToolSettings], group="agent"):
    """Make a research plan: the goal, 3-4 ordered steps and 2-3 search strategies. It is
    shown to the user as a checklist that follows your progress (update it with
    adapt_plan)."""

    # Before the seed's schema these were goal and steps.
    field_aliases: ClassVar[dict[str, str]] = {"goal": "research_goal", "steps": "planned_steps"}

    reasoning: str = Field(
        max_length=500,
        description="Why this approach to the research.",
        examples=["The request has two parts."],
    )
    research_goal: str = Field(
        min_length=1,
        max_length=300,
        description="The main research goal.",
        examples=["Compare A and B."],
    )
    planned_steps: list[Step] = Field(
        min_length=3,
        max_length=4,
        description="The planned steps, 3-4, in order.",
        examples=[["Find A's figures.", "Find B's figures.", "Write the comparison."]],
    )
    search_strategies: list[Step] = Field(
        min_length=2,
        max_length=3,
        description="How you will look for the information, 2-3 strategies.",
        examples=[["Official annual reports.", "Recent news articles."]],
    )


class AdaptPlan(BaseTool[AgentToolSettings], group="agent"):
    """Adapt the research plan to what you found: the original and the updated goal, what
    changed (1-3 items) and the updated remaining steps (2-4). The user's checklist keeps
    the steps already done and lists the new ones."""

    # Before the seed's schema: goal (null kept it), changes and steps (the whole plan).
    field_aliases: ClassVar[dict[str, str]] = {"goal": "new_goal", "changes": "plan_changes"}

    reasoning: str = Field(
        max_length=500,
        description="Why the plan needs to change, given the new data.",
        examples=["A's figures are not public."],
    )
    original_goal: str = Field(
        "",
        max_length=300,
        description="The research goal as it was.",
        examples=["Compare A and B."],
    )
    new_goal: str = Field(
        "",
        max_length=300,
        description="The updated research goal (the same words if it did not change).",
        examples=["Compare A and B from their annual reports."],
    )
    plan_changes: list[Step] = Field(
        min_length=1,
        max_length=3,
        description="The specific changes to the plan, 1-3.",
        examples=[["Use A's annual report instead."]],
    )
    next_steps: list[Step] = Field(
        min_length=2,
        max_length=4,
        description="The updated remaining steps, 2-4, in order.",
        examples=[["Read A's annual report.", "Write the comparison."]],
    )
    done_steps: list[Annotated[int, Field(ge=1, le=10)]] = Field(
        default_factory=list,
        max_length=10,
        description="Numbers (1-based) of the steps of the current plan that are done.",
    )

    @model_validator(mode="before")
    @classmethod
    def _whole_old_plan(cls, data: Any) -> Any:
        # The old `steps` was the whole plan, done steps included: the remaining ones are
        # those not listed as done. (A null goal kept the goal; an empty new_goal does.)
        if isinstance(data, dict) and "steps" in data and "next_steps" not in data:
            data = dict(data)
            done = set(data.get("done_steps") or [])
            steps = data.pop("steps")
            if isinstance(steps, list):
                data["next_steps"] = [s for i, s in enumerate(steps, start=1) if i not in done]
        return data


class Clarification(BaseTool[AgentToolSettings], group="agent"):
    """Ask the user before you go on, when the request is ambiguous. The turn pauses until
    the user answers; the answer comes back as this call's result. Use it sparingly."""

    reasoning: str = Field(
        max_length=200,
        description="Why you need to ask (at most 200 characters).",
        examples=["'Jaguar' may be the car or the animal."],
    )
    unclear_terms: list[Short] = Field(
        min_length=1, max_length=3, description="Unclear terms, 1-3.", examples=[["Jaguar"]]
    )
    assumptions: list[Short] = Field(
        min_length=2,
        max_length=3,
        description="What you would assume without an answer, 2-3.",
        examples=[["The car maker.", "Recent years."]],
    )
    questions: list[Short] = Field(
        min_length=1,
        max_length=3,
        description="Questions to the user, 1-3.",
        examples=[["Do you mean the car maker or the animal?"]],
    )


class FinalAnswer(BaseTool[AgentToolSettings], group="agent"):
    """Finish the task: the answer is shown to the user as your final message and the turn
    ends with the status you give ("completed", or "failed" when you could not do it)."""

    reasoning: str = Field(
        max_length=500, description="Why the task is done.", examples=["All steps are done."]
    )
    completed_steps: list[Step] = Field(
        min_length=1,
        max_length=5,
        description="What you did, 1-5 steps.",
        examples=[["Found both figures.", "Wrote the report."]],
    )
    answer: str = Field(
        min_length=1,
        description="The answer for the user (Markdown).",
        examples=["A grew faster than B [1]."],
    )
    status: Literal["completed", "failed"] = Field(
        description="completed or failed.", examples=["completed"]
    )


class CreateReport(BaseTool[AgentToolSettings], group="agent"):
    """Write a report as a Markdown file in this conversation's reports folder, with
    citations [1] [2] that refer to a numbered list of sources at its end. The user can
    download it from the card."""

    reasoning: str = Field(
        max_length=500,
        description="Why the report is ready.",
        examples=["Both sources agree."],
    )
    title: str = Field(
        min_length=1, max_length=200, description="The report's title.", examples=["A and B"]
    )
    user_request_language_reference: str = Field(
        max_length=200,
        description="A phrase of the user's request, to write the report in its language.",
        examples=["compare A and B"],
    )
    content: str = Field(
        min_length=1,
        description="The report in Markdown, citing sources as [1] [2] and listing them.",
        examples=["# A and B\n\nA grew 5% [1].\n\n## Sources\n[1] https://a.example/report"],
    )
    confidence: Literal["high", "medium", "low"] = Field(
        description="How sure you are.", examples=["medium"]
    )

    def check_policy(self, settings: AgentToolSettings, ctx: BindContext) -> None:
        size = len(self.content.encode("utf-8", "surrogatepass"))
        if size > settings.max_report_bytes:
            raise PolicyDenied(
                f"the report is {size:,} bytes; the limit is {settings.max_report_bytes:,}"
            )
        if ctx.user_id is not None:
            try:
                report_quota_check(
                    user_id=ctx.user_id,
                    folder=settings.reports_folder,
                    adding=size,
                    max_reports=settings.max_reports_per_user,
                    max_bytes=settings.max_report_bytes_per_user,
                )
            except Refused as exc:
                raise PolicyDenied(str(exc)) from None
