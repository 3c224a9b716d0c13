"""How a chat message reads on the page: markdown → safe HTML for assistant messages (rendered
server-side, sanitised with nh3 in ``infra.markdown``, single line breaks kept), and the
message's HTML itself (``message_html``), the same for the page and for its live events.

The message is the one template the chat renders on every live event (a person's message, a
reply starting, a reply ending: four to six times a turn), so it is a Jinja2 template
(``templates/chat/_message.jinja.html``), which renders it in half the CPU of Django's engine
(bench/HISTORY.md, issue 38). Its text is marked with ``_("…")``, which ``makemessages`` finds
in a ``.html`` file as it does in Django's templates; the tool cards inside it stay Django
templates (``tools/_toolcall_card.html``), rendered here and passed in as HTML.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any, cast

import jinja2
from django.conf import settings
from django.template.defaultfilters import linebreaksbr
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import capfirst

from infra.markdown import markdown_html

MESSAGE_TEMPLATE = "chat/_message.jinja.html"


def render_markdown(text: str) -> str:
    return markdown_html(text, breaks=True)


def markdown(text: str) -> SafeString:
    return mark_safe(render_markdown(text))  # noqa: S308 - sanitised by nh3 in render_markdown


def money(value: Any) -> str:
    """Dollars as people read them: $1.23, or four decimals below a cent ($0.0042)."""
    try:
        amount = Decimal(str(value or 0))
    except (InvalidOperation, ValueError):
        return ""
    if amount == 0:
        return "$0"
    if abs(amount) < Decimal("0.01"):
        return f"${amount:.4f}"
    return f"${amount:,.2f}"


@functools.cache
def _environment() -> jinja2.Environment:
    folders = cast("list[Any]", settings.TEMPLATES[0]["DIRS"])  # where Django's engine looks
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(folder) for folder in folders]),
        autoescape=True,  # as Django's engine: every value escaped unless marked safe
        auto_reload=settings.DEBUG,
        keep_trailing_newline=True,  # as Django's engine
        extensions=["jinja2.ext.i18n"],
    )
    # Old-style: ``_("…")`` is Django's gettext in the active language; placeholders are filled
    # with the ``format`` filter.
    env.install_gettext_callables(  # type: ignore[attr-defined]  # added by the i18n extension
        translation.gettext, translation.ngettext, newstyle=False
    )
    env.filters.update(
        markdown=markdown,
        money=money,
        capfirst=capfirst,
        linebreaksbr=lambda value: linebreaksbr(value, autoescape=True),
    )
    env.globals["url"] = lambda name, *args: reverse(name, args=args)
    return env


def message_html(
    message: Any,
    calls: Iterable[Any] = (),
    *,
    read_only: bool = False,
    shared_view: bool = False,
) -> SafeString:
    """The message's article, with the cards of ``calls`` in it. ``read_only``: an audited
    page (no actions); ``shared_view``: a share link's page (no actions, no approving)."""
    flags = {"read_only": read_only, "shared_view": shared_view}
    cards = [
        render_to_string("tools/_toolcall_card.html", {"call": call, **flags}) for call in calls
    ]
    template = _environment().get_template(MESSAGE_TEMPLATE)
    return mark_safe(template.render(message=message, cards=cards, **flags))  # noqa: S308 - autoescaped
