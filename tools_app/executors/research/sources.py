"""The turn's numbered sources (``ResearchSource``): register URLs, read the list.

A source keeps its number for the whole turn, whichever tool met it first and however many
calls run at once: numbers are taken in a transaction and a clash with a parallel call
(the unique constraints) is retried. Calls outside a turn (the Test button, a token's
``/mcp/`` call) number their own sources from 1, without storing them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from django.db import IntegrityError, transaction
from django.db.models import Max

from tools_app.executors.research.models import ResearchSource

RETRIES = 5


@dataclass(frozen=True)
class Found:
    url: str
    title: str = ""
    snippet: str = ""


def source_key(url: str) -> str:
    """A URL as a source: without its fragment (#section of the same page) and surrounding
    spaces; everything else as given."""
    parts = urlsplit(url.strip())
    return urlunsplit(parts._replace(fragment=""))


def _hash(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def sources_register(
    *, turn_id: int | None, found: list[Found], call_id: int | None, read: bool = False
) -> list[int]:
    """The number of each of ``found``, in order: the one it already has in this turn, or
    the next free one. ``read``: the page's content was extracted (marks the source)."""
    if turn_id is None:
        local: dict[str, int] = {}
        return [local.setdefault(source_key(f.url), len(local) + 1) for f in found]
    for attempt in range(RETRIES):
        try:
            with transaction.atomic():
                return _register(turn_id, found, call_id, read)
        except IntegrityError:  # a parallel call took a number or the URL first
            if attempt == RETRIES - 1:
                raise
    raise AssertionError("unreachable")


def _register(turn_id: int, found: list[Found], call_id: int | None, read: bool) -> list[int]:
    keys = [source_key(f.url) for f in found]
    known = {
        s.url_hash: s
        for s in ResearchSource.objects.filter(
            turn_id=turn_id, url_hash__in={_hash(k) for k in keys}
        )
    }
    top = ResearchSource.objects.filter(turn_id=turn_id).aggregate(n=Max("number"))["n"] or 0
    numbers = []
    for key, item in zip(keys, found, strict=True):
        digest = _hash(key)
        source = known.get(digest)
        if source is None:
            top += 1
            source = ResearchSource.objects.create(
                turn_id=turn_id,
                number=top,
                url=key,
                url_hash=digest,
                title=item.title[:500],
                snippet=item.snippet[:2000],
                read=read,
                first_call_id=call_id,
            )
            known[digest] = source
        else:
            changed: dict[str, object] = {}
            if item.title and not source.title:
                changed["title"] = item.title[:500]
            if read and not source.read:
                changed["read"] = True
            if changed:
                ResearchSource.objects.filter(pk=source.pk).update(**changed)
        numbers.append(source.number)
    return numbers


def sources_of_turn(turn_id: int | None) -> dict[int, ResearchSource]:
    """The turn's sources by number."""
    if turn_id is None:
        return {}
    return {s.number: s for s in ResearchSource.objects.filter(turn_id=turn_id)}
