from __future__ import annotations

from pydantic import Field

from platform_app.executors.skills.settings import SkillsSettings
from tools_app.registry import BaseTool


class SkillList(BaseTool[SkillsSettings], group="skills"):
    """List the available skills (name, description, where each comes from)."""


class SkillLoad(BaseTool[SkillsSettings], group="skills"):
    """Load the full instructions of a skill by name, before doing the task it describes."""

    name: str = Field(
        min_length=1, max_length=64, description="The skill's name.", examples=["release-notes"]
    )
