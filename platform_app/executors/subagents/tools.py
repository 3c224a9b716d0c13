from __future__ import annotations

from typing import Literal

from pydantic import Field

from platform_app.executors.schedules.tools import NAME_PATTERN, check_model
from platform_app.executors.subagents.settings import SubagentsSettings
from platform_app.schedules import conversation_owned
from platform_app.subagents import limits_check
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


class SubagentSpawn(BaseTool[SubagentsSettings], group="subagents"):
    """Hand a task to a helper agent. It runs on its own, in a new conversation, with this
    conversation's agent and tools; this call returns at once ("started"). When the helper
    finishes, its answer is posted where `inject_into` says: "parent" (this conversation,
    where you will see it), another conversation's id, or null (only logged, nobody is
    notified). A helper with nothing to report answers {"silent": true, "reason": "..."} and
    nothing is posted. Give it a self-contained task: it does not see this conversation."""

    name: str = Field(
        min_length=1,
        max_length=100,
        pattern=NAME_PATTERN,
        description="A short name for the helper, e.g. what it works on.",
        examples=["release-notes"],
    )
    message: str = Field(
        min_length=1,
        description="The task, self-contained: everything the helper needs to know.",
        examples=["List the three most recent entries of docs/CHANGELOG.md in one line each."],
    )
    model: str | None = Field(
        None, max_length=200, description="A model name for the helper; null: the agent's."
    )
    inject_into: int | Literal["parent"] | None = Field(
        None,
        description='Where the answer is posted: "parent" (this conversation), a conversation '
        "id, or null (only logged: kept in the helper's conversation, nobody is notified).",
        examples=["parent"],
    )

    def check_policy(self, settings: SubagentsSettings, ctx: BindContext) -> None:
        if ctx.user_id is None:
            raise PolicyDenied("subagents belong to a user; this call has none")
        if len(self.message) > settings.max_message_chars:
            raise PolicyDenied(
                f"the task is {len(self.message):,} characters; "
                f"the limit is {settings.max_message_chars:,}"
            )
        if isinstance(self.inject_into, int):
            if self.inject_into < 1:
                raise PolicyDenied("inject_into must be a conversation id, 'parent' or null")
            conversation_owned(conversation_id=self.inject_into, user_id=ctx.user_id)
        elif self.inject_into == "parent" and ctx.conversation_id is None:
            raise PolicyDenied(
                'inject_into "parent" needs a conversation; this call has none (give an id)'
            )
        # The helper's conversation takes this one's agent and provider.
        check_model(self.model, settings.allowed_models, conversation_id=ctx.conversation_id)
        limits_check(
            user_id=ctx.user_id,
            conversation_id=ctx.conversation_id,
            max_depth=settings.max_depth,
            max_concurrent=settings.max_concurrent_per_user,
        )
