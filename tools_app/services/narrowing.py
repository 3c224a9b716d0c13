"""Per-agent limits: an agent profile may lower a tool group's numeric limits for its own
calls (seed 004's per-agent ``search: max_results / content_limit``), never raise them.

Which fields: the group's ``limits`` (what the Tools Manager shows as the group's limits)
that are whole numbers with a minimum of 1 or more, so that lower is always stricter
(``calls_per_minute``'s 0 means "unlimited": it is not one of them). Applied when a call
runs (``services.execution``), from the profile of the call's conversation, which
``chat_app`` tells through ``settings_narrowing_set`` at ready().
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tools_app.group_settings import GroupSettings
from tools_app.registry import GROUPS

# (conversation id, group name) → the profile's limits for that group: field → value.
Narrowing = Callable[[int, str], dict[str, int]]
_source: Narrowing | None = None


def settings_narrowing_set(source: Narrowing | None) -> None:
    global _source
    _source = source


def narrowable_fields(group: str) -> tuple[str, ...]:
    found = GROUPS.get(group)
    if found is None:
        return ()
    fields = found.settings_model.model_fields
    out = []
    for name in found.limits:
        info = fields.get(name)
        if info is None or info.annotation is not int:
            continue
        floor = next((m.ge for m in info.metadata if getattr(m, "ge", None) is not None), None)
        if floor is not None and floor >= 1:
            out.append(name)
    return tuple(out)


def limits_check(value: Any) -> dict[str, dict[str, int]]:
    """``{group: {field: value}}`` as a profile may store it; ``ValueError`` saying what is
    wrong otherwise."""
    if not isinstance(value, dict):
        raise ValueError('expected group → {limit: value}, e.g. {"research": {"max_results": 5}}')
    out: dict[str, dict[str, int]] = {}
    for group, limits in value.items():
        allowed = narrowable_fields(str(group))
        if not allowed:
            raise ValueError(f"{group}: not a tool group with limits a profile may lower")
        if not isinstance(limits, dict):
            raise ValueError(f"{group}: expected {{limit: value}}")
        for name, number in limits.items():
            if name not in allowed:
                raise ValueError(f"{group}: {name} is not one of {', '.join(allowed)}")
            if isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise ValueError(f"{group}.{name}: a whole number, 1 or more")
        out[str(group)] = dict(limits)
    return out


def settings_narrowed(
    settings: GroupSettings, *, group: str, conversation_id: int | None
) -> GroupSettings:
    """``settings`` with the conversation's profile's lower limits for ``group``."""
    if _source is None or conversation_id is None:
        return settings
    allowed = narrowable_fields(group)
    if not allowed:  # nothing a profile could lower: no need to read it
        return settings
    limits = _source(conversation_id, group)
    lower = {
        name: value
        for name, value in limits.items()
        if name in allowed and isinstance(value, int) and 1 <= value < getattr(settings, name)
    }
    return settings.model_copy(update=lower) if lower else settings
