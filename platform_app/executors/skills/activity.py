"""Skills activities: the catalogue is read fresh on every call (files change; reading a few
small files costs far less than a stale answer)."""

from __future__ import annotations

from typing import Any

from platform_app.executors.skills.settings import SkillsSettings, skills_catalogue
from platform_app.executors.skills.tools import SkillList, SkillLoad
from platform_app.skills import SkillError, skill_get, skill_summary
from tools_app.errors import ToolError
from tools_app.registry import activity
from tools_app.runtime import ActivityContext


@activity("skill_list")
def skill_list(args: SkillList, ctx: ActivityContext[SkillsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    catalogue = skills_catalogue(settings, ctx.workspace_dir)
    skills = [skill_summary(s, catalogue) for s in catalogue.skills.values()]
    ctx.emit_output(f"{len(skills)} skill(s)\n")
    out: dict[str, Any] = {"count": len(skills), "skills": skills}
    if catalogue.problems:
        out["problems"] = catalogue.problems
    return out


@activity("skill_load")
def skill_load(args: SkillLoad, ctx: ActivityContext[SkillsSettings]) -> dict[str, Any]:
    settings = ctx.settings
    catalogue = skills_catalogue(settings, ctx.workspace_dir)
    try:
        skill = skill_get(catalogue, args.name)
    except SkillError as exc:
        raise ToolError(str(exc)) from None
    ctx.emit_output(f"loaded {skill.name} from {skill.source} ({skill.path})\n")
    return {**skill_summary(skill, catalogue), "instructions": skill.body}
