from __future__ import annotations

from typing import Literal

from pydantic import Field

from platform_app.executors.memory.settings import MemorySettings
from tools_app.errors import PolicyDenied
from tools_app.registry import BaseTool
from tools_app.runtime import BindContext


def _needs_user(ctx: BindContext) -> None:
    if ctx.user_id is None:
        raise PolicyDenied("memory belongs to a user; this call has none")


HELPER_READ_ONLY = (
    "core memory is read-only for a subagent (seed 002): read it with memory_core_get, and "
    "put what should change in your answer for the main conversation to decide"
)


def refuse_core_writes_from_a_helper(conversation_id: int | None) -> None:
    """A subagent (a helper's own conversation, at any depth) reads the user's core memory
    but never changes it: its words come from a task, not from the user."""
    from platform_app.models import Subagent

    if (
        conversation_id is not None
        and Subagent.objects.filter(conversation_id=conversation_id).exists()
    ):
        raise PolicyDenied(HELPER_READ_ONLY)


class MemorySave(BaseTool[MemorySettings], group="memory"):
    """Remember a fact or a text in the user's archival memory (kept across conversations).
    Long text is split into chunks and indexed for memory_search."""

    content: str = Field(
        min_length=1,
        description="What to remember, self-contained (it will be read without this conversation).",
        examples=["Alice's staging server is staging.example.com; deploys happen on Fridays."],
    )
    source: str = Field(
        "manual",
        max_length=200,
        description="Where the fact comes from, e.g. manual, a URL or a file name.",
    )

    def check_policy(self, settings: MemorySettings, ctx: BindContext) -> None:
        _needs_user(ctx)


class MemorySearch(BaseTool[MemorySettings], group="memory"):
    """Search the user's archival memory (hybrid: full-text and, when an embedder is
    configured, semantic similarity). Returns chunks with their source and date."""

    query: str = Field(min_length=1, description="What to look for.", examples=["staging server"])
    top_k: int = Field(10, ge=1, le=500, description="How many results at most.")

    def check_policy(self, settings: MemorySettings, ctx: BindContext) -> None:
        _needs_user(ctx)
        if self.top_k > settings.max_top_k:
            raise PolicyDenied(f"top_k is at most {settings.max_top_k}")


class MemoryCoreGet(BaseTool[MemorySettings], group="memory"):
    """Show the user's core memory: the small set of facts that is always in your prompt,
    in two sections, user and agent."""

    def check_policy(self, settings: MemorySettings, ctx: BindContext) -> None:
        _needs_user(ctx)


class MemoryCoreUpdate(BaseTool[MemorySettings], group="memory"):
    """Set one fact of core memory (always in your prompt; keep it short). section "user":
    about the user (name, preferences); "agent": about yourself (persona, standing
    instructions). An existing key is overwritten."""

    section: Literal["user", "agent"] = Field(description="Which section.", examples=["user"])
    key: str = Field(
        min_length=1, max_length=100, description="A short name, e.g. name.", examples=["name"]
    )
    value: str = Field(description="The fact.", examples=["Alice"])

    def check_policy(self, settings: MemorySettings, ctx: BindContext) -> None:
        _needs_user(ctx)
        refuse_core_writes_from_a_helper(ctx.conversation_id)


class MemoryCoreDelete(BaseTool[MemorySettings], group="memory"):
    """Delete one fact of core memory. Deleting a key that does not exist is an error."""

    section: Literal["user", "agent"] = Field(description="Which section.", examples=["user"])
    key: str = Field(
        min_length=1, max_length=100, description="The key to delete.", examples=["name"]
    )

    def check_policy(self, settings: MemorySettings, ctx: BindContext) -> None:
        _needs_user(ctx)
        refuse_core_writes_from_a_helper(ctx.conversation_id)
