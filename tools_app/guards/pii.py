"""Finding personal data in strings: e-mail addresses, phone numbers, payment card numbers
(Luhn-checked) and IBANs (mod-97-checked). A small detector of our own (no maintained PII
library is installed here); it prefers missing an odd format to flagging every number.
"""

from __future__ import annotations

import re

from tools_app.guards.secrets import Match

EMAIL = "Email Address"
PHONE = "Phone Number"
CARD = "Payment Card Number"
IBAN = "IBAN"

_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# International (+<country> …) or a grouped national number: 8 to 15 digits in all.
_PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,4}(?:[ .-]\d{2,4}){2,4}(?!\w)"
)
_NOT_PHONE = re.compile(r"\d{4}-\d{2}-\d{2}|\d{1,3}(?:\.\d{1,3}){3}")  # a date, an IPv4
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")


def luhn_valid(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = int(ch)
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def iban_valid(text: str) -> bool:
    compact = text.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    moved = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


def find_pii(text: str) -> list[Match]:
    found: list[Match] = []
    for m in _EMAIL.finditer(text):
        found.append(Match(EMAIL, *m.span()))
    for m in _IBAN.finditer(text):
        if iban_valid(m.group()):
            found.append(Match(IBAN, *m.span()))
    for m in _CARD.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            found.append(Match(CARD, *m.span()))
    taken = [(f.start, f.end) for f in found]
    for m in _PHONE.finditer(text):
        digits = re.sub(r"\D", "", m.group())
        if not 8 <= len(digits) <= 15 or _NOT_PHONE.fullmatch(m.group()):
            continue
        if any(s < m.end() and m.start() < e for s, e in taken):  # part of a card or IBAN
            continue
        found.append(Match(PHONE, *m.span()))
    return sorted(found, key=lambda f: f.start)
