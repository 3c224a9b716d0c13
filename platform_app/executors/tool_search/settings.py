from __future__ import annotations

from django.utils.translation import gettext as _
from pydantic import Field

from tools_app.registry import GroupSettings, ToolGroup, register_group


class ToolSearchSettings(GroupSettings):
    timeout_seconds: int = Field(10, ge=1, le=60, description="Longest a call may run (s).")
    max_results: int = Field(
        8, ge=1, le=50, description="Most tools one search names (best matches first)."
    )
    load_top: int = Field(
        3,
        ge=0,
        le=20,
        description="When the model names none to load, the schemas of this many best "
        "matches are loaded for the next round.",
    )
    match_by_meaning: bool = Field(
        True,
        description="Also rank the tools by meaning with the local embedding model "
        '(all-MiniLM-L6-v2 in the worker, as memory search uses): "clock" finds '
        "current_time. Off: by the words of their names and descriptions only.",
    )
    meaning_floor: float = Field(
        0.3,
        ge=0.0,
        le=1.0,
        description="How close in meaning (cosine similarity) a tool must be to the query to "
        "count as found.",
    )


GROUP = register_group(
    ToolGroup(
        name="tool_search",
        label=_("Tool search"),
        description="Find the tools you may use by what they do, and load their schemas when "
        "there are too many to send with every request.",
        settings_model=ToolSearchSettings,
        limits=("max_results", "load_top"),
        order=89,
    )
)
