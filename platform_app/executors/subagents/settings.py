from __future__ import annotations

from django.utils.translation import gettext as _
from pydantic import Field, field_validator

from tools_app.registry import GroupSettings, ToolGroup, register_group


class SubagentsSettings(GroupSettings):
    timeout_seconds: int = Field(15, ge=1, le=120, description="Longest a call may run (s).")
    max_depth: int = Field(
        2,
        ge=1,
        le=2,
        description="How deep subagents may nest (1: a subagent cannot spawn another).",
    )
    max_concurrent_per_user: int = Field(
        3, ge=1, le=100, description="Subagents one user may have running at once."
    )
    max_rounds: int = Field(
        5, ge=1, le=50, description="Model rounds a subagent's turn may take before it stops."
    )
    max_message_chars: int = Field(
        8000, ge=1, le=100_000, description="Longest task a subagent may be given."
    )
    max_result_chars: int = Field(
        8000,
        ge=100,
        le=200_000,
        description="Longest answer posted back into the parent conversation (the rest stays "
        "in the subagent's conversation).",
    )
    allowed_models: list[str] = Field(
        default_factory=list,
        description="Model names a subagent may ask for, one per line (empty: the agent's "
        "model, its provider's, or one of the provider's allowed models).",
    )

    @field_validator("allowed_models")
    @classmethod
    def _models(cls, value: list[str]) -> list[str]:
        return [v.strip() for v in value if v.strip()]


GROUP = register_group(
    ToolGroup(
        name="subagents",
        label=_("Subagents"),
        description="subagent_spawn: a helper runs a task as its own turn in a child "
        "conversation and posts its answer back when it is done.",
        settings_model=SubagentsSettings,
        limits=("max_depth", "max_concurrent_per_user", "max_rounds"),
        order=88,
    )
)
