"""Previews: what a call waiting for approval would do, in words an approver can check.

An executor package may have a ``preview.py`` whose functions are registered with
``@preview("<activity>")`` (``tools_app.registry``): ``fn(args, ctx) -> Preview``, where
``args`` are the call's validated arguments and ``ctx`` a ``PreviewContext``. A preview only
reads — the file as it is now, the settings the executor would apply — and says why it
cannot when it cannot (``PreviewUnavailable``); it never blocks the decision. The service
that runs it for a call is ``tools_app.services.preview``.

The helpers here are the shared parts: a unified diff (Python's ``difflib``: the standard
library already solves it, and its output is the format every reviewer reads), and the
masking of secrets in headers and query strings.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote_plus, urlsplit, urlunsplit

# Most diff lines shown (a preview is for reading, not a copy of the file).
MAX_DIFF_LINES = 600
# Most characters of a body or a value shown.
MAX_TEXT = 4000
MASK = "••••••"

_SECRET_NAME = re.compile(
    r"(authorization|cookie|token|secret|passw|api[-_]?key|apikey|key$|^key|session|signature"
    r"|credential|auth)",
    re.IGNORECASE,
)


class PreviewUnavailable(Exception):
    """The preview cannot be made; ``reason`` says why (shown as "no preview: <reason>")."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PreviewContext:
    """What a preview gets besides the arguments. ``settings``: the validated settings of the
    group the activity belongs to (as the executor would get them); ``workspace_dir``: the
    call's workspace (not created: a preview writes nothing). ``own_arguments``: the call's
    own arguments when someone other than the requester previews an edit of them — a preview
    that reads something (a file) reads only what those name, so an approver's edit cannot
    read the requester's other files; None: the requester, or the call's own arguments."""

    settings: Any
    workspace_dir: Path
    call_id: int | None
    conversation_id: int | None
    user_id: int | None
    own_arguments: dict[str, Any] | None = None


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "head" (---/+++), "hunk" (@@), "add", "del", "same"
    text: str


@dataclass
class Preview:
    """One preview: a title, then a diff (``lines``), labelled values (``fields``) or both;
    ``note`` says what else an approver should know (a new file, a binary one, a cut diff).
    ``unavailable``: why there is none (then nothing else is shown)."""

    title: str = ""
    lines: list[DiffLine] = field(default_factory=list)
    fields: list[tuple[str, str]] = field(default_factory=list)
    note: str = ""
    unavailable: str = ""
    taken_at: datetime | None = None

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.kind == "add")

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.kind == "del")


def unified_diff(
    old: str, new: str, *, path: str, new_file: bool = False
) -> tuple[list[DiffLine], bool]:
    """The lines of a unified diff from ``old`` to ``new`` (at most MAX_DIFF_LINES), and
    whether it was cut."""
    before = "/dev/null" if new_file else f"a/{path}"
    out: list[DiffLine] = []
    cut = False
    for raw in difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=before, tofile=f"b/{path}", lineterm="", n=3
    ):
        if len(out) >= MAX_DIFF_LINES:
            cut = True
            break
        if raw.startswith(("--- ", "+++ ")) and len(out) < 2:
            kind = "head"
        elif raw.startswith("@@"):
            kind = "hunk"
        elif raw.startswith("+"):
            kind = "add"
        elif raw.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        out.append(DiffLine(kind, raw))
    return out, cut


def secret_name(name: str) -> bool:
    """Whether a header or parameter of this name carries a credential."""
    return bool(_SECRET_NAME.search(name))


def masked_value(name: str, value: str) -> str:
    """``value`` with its secret part hidden when ``name`` says it is one (an Authorization
    header keeps its scheme: "Bearer ••••••")."""
    if not secret_name(name):
        return shortened(value)
    scheme, sep, _rest = value.partition(" ")
    if sep and name.lower() in ("authorization", "proxy-authorization") and scheme.isalpha():
        return f"{scheme} {MASK}"
    return MASK


def masked_url(url: str) -> str:
    """``url`` with credentials hidden: a user:password part and secret query parameters."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return shortened(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = "&".join(
            f"{quote_plus(k)}={MASK if secret_name(k) else quote_plus(v)}" for k, v in pairs
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def shortened(text: str, limit: int = MAX_TEXT) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit:,} more characters)"
