from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.utils.translation import gettext as _
from pydantic import Field

from tools_app.registry import GroupSettings, ToolGroup, register_group


class SkillsSettings(GroupSettings):
    timeout_seconds: int = Field(10, ge=1, le=120, description="Longest a call may run (s).")
    workspace_skills: bool = Field(
        True,
        description="Also offer skills from the conversation workspace's skills/ folder "
        "(files the model and the user can write; they win over data skills of the same name).",
    )
    shipped_skills: bool = Field(
        True,
        description="Offer the skills that come with Control Center (testing, git-ops, "
        "memory); a data or workspace skill of the same name replaces one.",
    )
    max_skill_bytes: int = Field(
        65_536, ge=1_024, le=1_048_576, description="Largest SKILL.md read."
    )
    max_skills: int = Field(100, ge=1, le=1000, description="Most skills per place.")
    in_prompt: bool = Field(
        True, description="List skill names and descriptions in every system prompt."
    )


def skills_catalogue(settings: Any, workspace_dir: Any = None) -> Any:
    from platform_app.skills import SHIPPED_DIR, skill_catalogue

    return skill_catalogue(
        shipped_dir=SHIPPED_DIR if getattr(settings, "shipped_skills", True) else None,
        data_dir=django_settings.SKILLS_DIR,
        workspace_dir=workspace_dir if settings.workspace_skills else None,
        max_bytes=settings.max_skill_bytes,
        max_skills=settings.max_skills,
    )


def skills_status(settings: Any) -> tuple[str, str, str]:
    catalogue = skills_catalogue(settings)
    count = len(catalogue.skills)
    label = f"{count} skill{'s' if count != 1 else ''}"
    detail = f"in {django_settings.SKILLS_DIR}"
    if catalogue.problems:
        return "bad", label, f"{detail}; problems: {'; '.join(catalogue.problems)[:300]}"
    return "ok", label, detail


def skills_listing(settings: Any) -> list[dict[str, str]]:
    """For the Tools Manager: the shipped and data directory's skills (workspace ones vary
    per chat)."""
    catalogue = skills_catalogue(settings)
    rows = [
        {
            "name": s.name,
            "description": s.description,
            "note": "shipped" if s.source == "shipped" else s.path,
        }
        for s in catalogue.skills.values()
    ]
    rows += [
        {"name": "", "description": problem, "note": "problem"} for problem in catalogue.problems
    ]
    return rows


GROUP = register_group(
    ToolGroup(
        name="skills",
        label=_("Skills"),
        description="Task instructions (SKILL.md) from the data directory and the conversation "
        "workspace; names in the prompt, full text on demand.",
        settings_model=SkillsSettings,
        limits=("shipped_skills", "workspace_skills", "max_skill_bytes"),
        order=66,
        status=skills_status,
        listing=skills_listing,
    )
)
