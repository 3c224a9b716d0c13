"""Tool descriptions in another language: what people read (the Tools Manager, the Test
form, /help) and, where an admin lets it, what the model reads.

Only descriptions change; tool names, argument names, types and everything binding checks stay
as the tool declares them, so validation, policy and the audit never depend on a language. The
English text in the tool's code is the message id: ``manage.py tool_catalog`` writes every
built-in description into ``tools_app/tool_strings.py`` for ``makemessages`` to collect, and a
description without a translation is offered as written. Imported tools (MCP, OpenAPI) are
shown as their servers describe them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

# Strict schemas fold an argument's default into its description (tools_app.schema): the
# description is looked up without it, and the suffix is said in the language too.
_FOLDED_DEFAULT = re.compile(r"^(?P<text>.*) \(default: (?P<default>.*)\)$", re.DOTALL)
DEFAULT_SUFFIX = gettext_noop("%(text)s (default: %(default)s)")


def language_supported(language: str) -> bool:
    return language in {code for code, _name in settings.LANGUAGES}


def text_localized(text: str) -> str:
    """``text`` in the active language when the catalog has it (else as written)."""
    if not text:
        return text
    translated = gettext(text)
    if translated != text:
        return translated
    folded = _FOLDED_DEFAULT.match(text)
    if folded is not None and gettext(folded["text"]) != folded["text"]:
        return gettext(DEFAULT_SUFFIX) % {
            "text": gettext(folded["text"]),
            "default": folded["default"],
        }
    return text


def schema_localized(schema: Any) -> Any:
    """A copy of an OpenAI- or Anthropic-format schema (or any part of one) with every
    ``description`` in the active language; everything else as it was."""
    if isinstance(schema, list):
        return [schema_localized(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: text_localized(value)
        if key == "description" and isinstance(value, str)
        else schema_localized(value)
        for key, value in schema.items()
    }


def text_in(text: str, language: str) -> str:
    """One description in ``language`` (as written where there is no translation)."""
    return str(schema_in({"description": text}, language)["description"])


def schema_in(schema: dict[str, Any], language: str) -> dict[str, Any]:
    """``schema`` with its descriptions in ``language`` (English, or a language the site does
    not offer: unchanged). Callers that offer it every round cache the result."""
    if not language or language == "en" or not language_supported(language):
        return schema
    with translation.override(language):
        localized: dict[str, Any] = schema_localized(schema)
    return localized


# The language a person chose (the platform's preferences, registered at ready()): emails to
# them are written in it. None registered, or no choice: the site's default.
_person_language: Callable[[Any], str] | None = None


def person_language_set(find: Callable[[Any], str] | None) -> None:
    global _person_language
    _person_language = find


def person_language(user: Any) -> str:
    chosen = _person_language(user) if _person_language is not None else ""
    return chosen or settings.LANGUAGE_CODE
