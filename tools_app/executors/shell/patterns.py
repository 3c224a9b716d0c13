"""Deny-list entries that are command patterns (``rm -rf``, ``git push --force``), not only
program names (seed 001's shell example).

A pattern is matched on the parsed argv of every command a line runs (``policy._Checker``
finds them: pipelines, ``sudo``, ``xargs``, ``bash -c``, ``find -exec`` ...), never on the
text, so spacing and quoting change nothing:

* the program by basename (``/bin/rm`` is ``rm``), as for program names;
* short options as a set of letters, however grouped or ordered: ``-rf`` matches ``-rf``,
  ``-fr``, ``-r -f``, ``-Rfv``; long options by name (``--force``, ``--force=yes``); options
  count wherever they stand before ``--`` (GNU tools take them after operands too);
* other words (``push`` in ``git push --force``) must appear among the command's operands, in
  the pattern's order.

``rm``'s spellings of the same option are one (``-R`` = ``-r``, ``--recursive``, ``--force``):
the seed's example must not be one word away from passing. A word that cannot be read
(``$FLAGS``, a glob) matches nothing: with an empty allowlist the deny list guards against
mistakes, not against someone hiding words (the allowlist and the sandbox do that).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Per program: option spellings that mean the same thing, as the short letter they mean.
_SAME: dict[str, dict[str, str]] = {
    "rm": {"R": "r", "--recursive": "r", "--force": "f"},
}


@dataclass(frozen=True)
class CommandPattern:
    text: str
    program: str
    operands: tuple[str, ...]
    short: frozenset[str]
    long: frozenset[str]

    def matches(self, program: str, argv: Sequence[str]) -> bool:
        if program != self.program:
            return False
        operands, short, long = _read(program, argv)
        if not (self.short <= short and self.long <= long):
            return False
        found = iter(operands)
        return all(word in found for word in self.operands)  # in order, gaps allowed


def parse_pattern(entry: str) -> CommandPattern:
    """A deny-list entry with arguments as a pattern; ``ValueError`` when it is not one."""
    words = shlex.split(entry, comments=False, posix=True)
    if len(words) < 2:
        raise ValueError(f"{entry!r} is a program name, not a pattern")
    program = words[0].rsplit("/", 1)[-1]
    if not program or program.startswith("-"):
        raise ValueError(f"{entry!r} must start with a program name")
    if "--" in words[1:]:
        raise ValueError(f"{entry!r}: '--' has no meaning in a pattern")
    operands, short, long = _read(program, words[1:])
    return CommandPattern(shlex.join([program, *words[1:]]), program, operands, short, long)


def is_pattern(entry: str) -> bool:
    return any(c.isspace() for c in entry.strip())


def patterns_of(entries: Iterable[str]) -> list[CommandPattern]:
    return [parse_pattern(e) for e in entries if is_pattern(e)]


def _read(
    program: str, argv: Sequence[str]
) -> tuple[tuple[str, ...], frozenset[str], frozenset[str]]:
    same = _SAME.get(program, {})
    operands: list[str] = []
    short: set[str] = set()
    long: set[str] = set()
    options = True
    for arg in argv:
        if options and arg == "--":
            options = False
        elif options and arg.startswith("--") and len(arg) > 2:
            name = arg.split("=", 1)[0]
            if name in same:
                short.add(same[name])
            else:
                long.add(name)
        elif options and arg.startswith("-") and len(arg) > 1:
            short.update(same.get(letter, letter) for letter in arg[1:])
        else:
            operands.append(arg)
    return tuple(operands), frozenset(short), frozenset(long)
