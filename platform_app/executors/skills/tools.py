from __future__ import annotations

from pydantic import Field

from tools_app.registry import BaseTool


class SkillList(BaseTool, group="skills"):
    """List the available skills (name, description, where each comes from)."""


class SkillLoad(BaseTool, group="skills"):
    """Load the full instructions of a skill by name, before doing the task it describes."""

    name: str = Field(
        min_length=1, max_length=64, description="The skill's name.", examples=["release-notes"]
    )
