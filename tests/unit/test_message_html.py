"""A chat message's HTML (``chat_app.rendering.message_html``, a Jinja2 template since issue 38):
the same on the page and in the live event, escaped, translated, with each page's actions, and
its words found by ``makemessages`` like those of Django's templates."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from django.template import Context, Template
from django.utils import translation
from django.utils.translation.template import templatize

from chat_app.events import message_event
from chat_app.models import Message
from chat_app.rendering import MESSAGE_TEMPLATE, message_html
from tools_app.models import ToolCall

PAGE = Template("{% load cc_tags %}{% message_html message calls %}")
SHARED = Template("{% load cc_tags %}{% message_html message calls shared_view=True %}")


def _reply(**fields: object) -> Message:
    values: dict[str, object] = {
        "pk": 7,
        "conversation_id": 3,
        "turn_id": 5,
        "role": "assistant",
        "state": "complete",
        "content": "It's **late** in Tokyo.",
        "usage": {"model": "m", "input_tokens": 1200, "output_tokens": 30, "cost": "0.0042"},
    }
    values.update(fields)
    return Message(**values)


def _call() -> ToolCall:
    return ToolCall(
        pk=11,
        tool="current_time",
        group="time",
        status="succeeded",
        arguments={"timezone": "Asia/Tokyo"},
        result={"time": "13:00"},
        language="en",
        version=2,
    )


def test_the_page_and_the_live_event_render_a_message_alike() -> None:
    message, calls = _reply(), [_call()]
    page = PAGE.render(Context({"message": message, "calls": calls}))
    assert page == message_event(message, calls)["html"]
    assert 'id="toolcall-11"' in page  # the card, rendered by Django's engine, inside
    assert '1200 in · 30 out · <span class="cost">$0.0042</span> · m' in page
    assert 'data-msg-action="regenerate"' in page


def test_what_a_person_or_a_model_wrote_is_escaped() -> None:
    attack = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    person = Message(pk=1, conversation_id=3, turn_id=5, role="user", content=attack)
    person.branch = None
    streaming = _reply(state="streaming", content=attack, usage={})
    closed = _reply(content=attack)
    for message in (person, streaming, closed):
        html = str(message_html(message))
        assert "<script>" not in html and "<img" not in html, message.state
        assert "&lt;script&gt;" in html  # shown as text, in the body or the copy source
    name = {"name": '"><script>x</script>.txt'}
    upload = Message(pk=2, conversation_id=3, turn_id=5, role="user", attachments=[name])
    upload.branch = None
    assert "<script>" not in str(message_html(upload))


def test_a_shared_or_audited_page_offers_no_actions() -> None:
    message = _reply()
    shared = SHARED.render(Context({"message": message, "calls": []}))
    audited = PAGE.render(Context({"message": message, "calls": [], "read_only": True}))
    for html in (shared, audited):
        assert 'data-msg-action="regenerate"' not in html
        assert 'data-msg-action="copy"' in html  # copying is reading


def test_a_message_reads_in_the_conversations_language() -> None:
    with translation.override("ru"):
        html = str(message_html(_reply()))
    assert "Копировать" in html and "Ассистент" in html
    assert "1200 in" not in html  # the usage line is translated too


def test_makemessages_finds_every_word_the_template_marks() -> None:
    """``_("…")`` with anything after the text (arguments) is invisible to ``makemessages``:
    its translation would be dropped as obsolete the next time the catalogs are made."""
    path = Path(settings.TEMPLATES[0]["DIRS"][0]) / MESSAGE_TEMPLATE
    source = path.read_text()
    marked = re.findall(r"""_\(("[^"]*"|'[^']*')""", source)
    found = re.findall(r" _\((.*?)\) ", templatize(source))
    assert marked and sorted(found) == sorted(marked)
