from __future__ import annotations

from pydantic import Field

from platform_app.executors.tool_search.settings import ToolSearchSettings
from tools_app.registry import BaseTool


class ToolSearch(BaseTool[ToolSearchSettings], group="tool_search"):
    """Find more tools you may use by what they do: returns their names and one-line
    descriptions, and loads their schemas so you can call them in your next step."""

    query: str = Field(
        min_length=1,
        max_length=300,
        description="What the tool should do, in a few words.",
        examples=["current time"],
    )
    load: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="Names to load; empty: the best matches.",
    )
