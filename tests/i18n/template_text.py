"""Finds text in templates that people would read but that is not marked for translation.

A template is split into HTML tags, template tags, variables and text. Text with a word in it
counts as visible unless it is inside a ``{% translate %}`` / ``{% blocktranslate %}``, a
comment, or an element whose content is code or data (script, style, pre, code, kbd, textarea);
the attributes people read (title, aria-label, placeholder, alt, hx-confirm) count too. It is
a heuristic, as any such check is: what it cannot see is text a variable brings.
"""

from __future__ import annotations

import re
from pathlib import Path

TOKEN = re.compile(r"({%.*?%}|{{.*?}}|{#.*?#}|<!--.*?-->|<(?:{%.*?%}|{{.*?}}|[^>])*>)", re.S)
WORD = re.compile(r"[A-Za-z]{2,}")
CODE_ELEMENTS = ("script", "style", "pre", "code", "kbd", "textarea")
READ_ATTRIBUTES = ("title", "aria-label", "placeholder", "alt", "hx-confirm")
BLOCK_TRANSLATE = re.compile(r"{%\s*blocktrans(?:late)?\b.*?{%\s*endblocktrans(?:late)?\s*%}", re.S)
ATTRIBUTE = re.compile(r"(?<![\w-])(" + "|".join(READ_ATTRIBUTES) + r')="([^"]*)"')
# Words that read the same in every language: product and protocol names, units.
SAME_IN_EVERY_LANGUAGE = {"Control Center", "JSON", "OpenAPI", "MCP", "URL", "API", "SSO", "CSV"}


def unmarked_text(source: str) -> list[str]:
    """The pieces of ``source`` that look visible and are not marked for translation."""
    found: list[str] = []
    open_code: list[str] = []
    skipping = 0  # inside translate blocks or comments
    in_class_block = False
    for token in TOKEN.split(source):
        if not token:
            continue
        if token.startswith("{%"):
            inner = token[2:-2].strip()
            word = inner.split(" ", 1)[0]
            if word in ("blocktranslate", "blocktrans", "comment", "verbatim"):
                skipping += 1
            elif word in ("endblocktranslate", "endblocktrans", "endcomment", "endverbatim"):
                skipping -= 1
            elif word == "block" and inner.endswith("class"):  # CSS classes, not words
                skipping += 1
                in_class_block = True
            elif word == "endblock" and in_class_block:
                skipping -= 1
                in_class_block = False
            continue
        if token.startswith(("{{", "{#", "<!--")):
            continue
        if token.startswith("<"):
            match = re.match(r"<(/?)([a-zA-Z0-9-]+)", token)
            if match and match.group(2).lower() in CODE_ELEMENTS:
                if match.group(1):
                    if open_code:
                        open_code.pop()
                elif not token.endswith("/>"):
                    open_code.append(match.group(2).lower())
            if not skipping:
                for _name, value in ATTRIBUTE.findall(token):
                    if WORD.search(_attribute_words(value)):
                        found.append(value.strip())
            continue
        if skipping or open_code:
            continue
        text = " ".join(token.split())
        if WORD.search(text) and text not in SAME_IN_EVERY_LANGUAGE:
            found.append(text)
    return found


def _attribute_words(value: str) -> str:
    """What an attribute's value shows that no translate tag, variable or tag produces.
    ``value`` ends at its first inner quote: ``{% translate "Save" %}`` arrives as
    ``{% translate ``, ``{{ _("Save") }}`` as ``{{ _(``."""
    plain = BLOCK_TRANSLATE.sub(" ", value)
    plain = re.sub(r"{{.*?}}|{%.*?%}", " ", plain, flags=re.S)
    return re.sub(r"({{|{%).*$", " ", plain, flags=re.S)


def unmarked_in(folder: Path) -> dict[str, list[str]]:
    out = {}
    for path in sorted(folder.rglob("*.html")):
        pieces = unmarked_text(path.read_text())
        if pieces:
            out[str(path.relative_to(folder))] = pieces
    return out
