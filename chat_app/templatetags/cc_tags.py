from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.formats import number_format
from django.utils.translation import gettext

from chat_app import rendering
from chat_app.services.titles import DEFAULT_TITLE

register = template.Library()


register.filter("markdown", rendering.markdown)
register.filter("money", rendering.money)


@register.simple_tag(takes_context=True)
def message_html(context: Any, message: Any, calls: Any = (), shared_view: bool = False) -> str:
    """The message as the chat renders it (``chat_app.rendering``), with the page's flags."""
    return rendering.message_html(
        message,
        calls,
        read_only=bool(context.get("read_only")),
        shared_view=shared_view or bool(context.get("shared_view")),
    )


@register.filter
def pretty_json(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter
def compact_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


@register.filter
def duration(ms: int | None) -> str:
    if ms is None:
        return ""
    # Units and the decimal separator in the page's language.
    milliseconds, seconds, minutes = gettext("ms"), gettext("s"), gettext("min")
    if ms < 1000:
        return f"{ms} {milliseconds}"
    if ms < 60_000:
        return f"{number_format(ms / 1000, 1)} {seconds}"
    return f"{ms // 60_000} {minutes} {ms % 60_000 // 1000} {seconds}"


@register.filter
def epoch_ms(value: Any) -> str:
    return str(int(value.timestamp() * 1000)) if value else ""


LONG_TEXT = 120  # characters: a multi-line string this long reads better as its own block
FIRST_KEYS = ("success", "error")


@register.filter
def result_parts(call: Any) -> list[dict[str, str]]:
    """A call's result for people: the small fields as JSON (success and error first), long
    multi-line texts (stdout, logs, file content) as their own blocks, and no repeat of text
    the live output above already shows."""
    result = call.result
    if not isinstance(result, dict):
        return [{"key": "", "text": pretty_json(result)}] if result is not None else []
    output = call.output or ""
    small: dict[str, Any] = {k: result[k] for k in FIRST_KEYS if k in result}
    blocks: list[dict[str, str]] = []
    for key, value in result.items():
        if key in FIRST_KEYS:
            continue
        if isinstance(value, str) and "\n" in value.strip() and len(value) >= LONG_TEXT:
            if value.strip() and value.strip() in output:
                small[key] = "(shown in the output above)"
            else:
                blocks.append({"key": key, "text": value})
        else:
            small[key] = value
    return [{"key": "", "text": pretty_json(small)}, *blocks]


@register.filter
def tokens(value: Any) -> str:
    """12,345 → 12.3k; 2,500,000 → 2.5M (a reader's rounding; tables keep it short)."""
    try:
        n = int(value or 0)
    except (TypeError, ValueError):
        return ""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.1f}k"
    return f"{n:,}"


@register.filter
def get_item(row: Any, key: str) -> Any:
    return row.get(key) if isinstance(row, dict) else getattr(row, key, None)


@register.filter
def conversation_title(title: str) -> str:
    """A conversation's title; the placeholder of one not yet named, in the page's language."""
    return gettext("New conversation") if title == DEFAULT_TITLE else title


@register.filter
def web_url(value: Any) -> str:
    """``value`` when it is an http(s) URL, else "": links built from what tools returned
    (a search backend's results) must never be ``javascript:`` or ``data:``."""
    text = str(value or "").strip()
    return text if text.lower().startswith(("http://", "https://")) else ""
