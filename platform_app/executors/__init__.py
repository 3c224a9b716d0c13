"""The platform's executor packages: tools that remember and organise (memory, docs, skills,
messages, schedules, subagents) and the agent tools that structure a turn. Same shape as
``tools_app.executors``; ``platform_app.apps`` loads them."""

from __future__ import annotations

EXECUTORS: list[str] = [
    "memory", "docs", "skills", "messaging", "schedules", "subagents", "agent", "tool_search",
]  # fmt: skip
