"""JSON from outside (request bodies, websocket frames) parsed with a limit on its nesting.

``json.loads`` recurses once per level: 300 KB of ``[`` raises ``RecursionError``, which no
``except ValueError`` catches, and JSON a few hundred levels deep parses but then recurses
again wherever it goes (validation, ``json.dumps`` into a JSONField). No request of ours is
nested more than a dozen levels, so anything past ``MAX_DEPTH`` is refused, as a ValueError.

Cheaply: text with no more brackets than the limit cannot be nested deeper, and is parsed as
it is (most requests); otherwise the parsed value is measured level by level, stopping at the
first level too many. (Not a scan of the text before parsing: skipping its strings with a
regular expression was slower than parsing, and quadratic on an unterminated string.)
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 64
_CONTAINERS = (list, dict)


class JsonTooDeep(ValueError):
    """The JSON is nested deeper than the limit (a ValueError, like malformed JSON)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"JSON nested deeper than {limit} levels")
        self.limit = limit


def json_loads_safe(raw: str | bytes | bytearray, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` for untrusted input: ValueError (JsonTooDeep when nested too deep,
    UnicodeDecodeError for bytes in no JSON encoding), never RecursionError."""
    if isinstance(raw, bytes | bytearray):
        data = bytes(raw)
        text = data.decode(json.detect_encoding(data), "surrogatepass")
    else:
        text = raw
    if text.count("[") + text.count("{") <= max_depth:
        return json.loads(text)
    try:
        value = json.loads(text)
    except RecursionError:
        raise JsonTooDeep(max_depth) from None
    json_depth_check(value, max_depth=max_depth)
    return value


def json_depth_check(value: Any, *, max_depth: int = MAX_DEPTH) -> None:
    """JsonTooDeep when the parsed ``value`` has arrays or objects more than ``max_depth``
    levels inside each other."""
    # Exact types (what json.loads makes) and list comprehensions: a walk of a 2 MB body
    # of small arrays costs less than its parse (a generator per container cost 3x more).
    level = [value] if type(value) in _CONTAINERS else []
    depth = 0
    while level:
        depth += 1
        if depth > max_depth:
            raise JsonTooDeep(max_depth)
        inner: list[Any] = []
        for container in level:
            items = container.values() if type(container) is dict else container
            inner += [v for v in items if type(v) in _CONTAINERS]
        level = inner
