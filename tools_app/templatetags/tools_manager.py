"""Template helpers for the Tools Manager and audit pages."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.http import urlencode

from tools_app.i18n import text_localized

register = template.Library()


@register.filter
def status_label(value: str) -> str:
    """``awaiting_approval`` → ``awaiting approval`` (audit statuses are words, not codes)."""
    return str(value or "").replace("_", " ")


@register.simple_tag
def query_with(query: dict[str, Any], **changes: Any) -> str:
    """The current filters as a query string, with some keys changed (pages, exports)."""
    merged = {**query, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in ("", None)})


@register.filter
def localized(value: str) -> str:
    """A tool's description, a group's label or description in the page's language, where the
    catalog has it (tools_app.i18n); imported tools' own words otherwise."""
    return text_localized(str(value or ""))


@register.filter
def widening_refusal(call: Any) -> str:
    """Why an approval of ``call`` may not be remembered ("": it may)."""
    from tools_app.services.standing import widening_refusal as refusal

    return refusal(call.tool, approvals_needed=call.approvals_needed or 1) or ""


@register.filter
def widen_kind_fits(value: Any, kind: str) -> bool:
    """Whether an argument's value can be matched by ``kind`` (a path, a URL)."""
    from tools_app.services.standing import kind_fits

    return kind_fits(value, kind)
