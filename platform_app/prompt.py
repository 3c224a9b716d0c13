"""What every system prompt gets from the platform tools: the user's core memory and the
index of skills (names and descriptions only; skill_load gives the full text).

``platform_prompt`` is the one call the agent loop makes; each block also has its own
service (``memory_core_prompt``, ``skills_prompt``) for other callers and tests. Tools write
both (memory_core_update, a skill file in the workspace), so each block stands between
untrusted-data markers (``tools_app.untrusted``).
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from tools_app import selectors
from tools_app.runtime import workspace_dir_for, workspace_id_for
from tools_app.untrusted import marker_id, untrusted

logger = logging.getLogger(__name__)


def core_memory_prompt(user_id: int | None) -> str:
    """The core-memory block, unless an admin switched Memory (or its prompt block) off."""
    from platform_app.memory.services import memory_core_prompt

    if user_id is None or not selectors.group_enabled("memory"):
        return ""
    if not getattr(selectors.group_settings("memory"), "core_in_prompt", True):
        return ""
    return memory_core_prompt(user_id)


def skills_prompt(*, user_id: int | None, conversation_id: int | None) -> str:
    """Names and descriptions of the skills this conversation can load."""
    from platform_app.executors.skills.settings import skills_catalogue
    from platform_app.skills import skills_prompt_block

    if not selectors.group_enabled("skills"):
        return ""
    settings = selectors.group_settings("skills")
    if not getattr(settings, "in_prompt", True):
        return ""
    workspace = workspace_dir_for(
        workspace_id_for(conversation_id=conversation_id, user_id=user_id)
    )
    return skills_prompt_block(skills_catalogue(settings, workspace))


def platform_prompt(
    *, user_id: int | None, conversation_id: int | None, offered: Collection[str] | None = None
) -> str:
    """The blocks to append to a system prompt ("" when there are none), each preceded by a
    blank line. ``offered``: the tools this turn offers (skills are listed only when
    skill_load is among them). Never raises: a turn goes on without the blocks."""
    blocks = []
    try:
        blocks.append(("core memory", core_memory_prompt(user_id)))
        if offered is None or "skill_load" in offered:
            skills = skills_prompt(user_id=user_id, conversation_id=conversation_id)
            blocks.append(("skills", skills))
    except Exception:
        logger.exception("building the platform prompt blocks failed")
    marker = marker_id(conversation_id, user_id)
    return "".join(
        f"\n\n{untrusted(text, source=source, marker=marker)}" for source, text in blocks if text
    )
