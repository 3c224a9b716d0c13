"""Plain lines (words joined by ``&&`` ``||`` ``|`` ``;``) are split without bashlex: the
checker must see in them exactly what it sees when bashlex parses them, and must hand every
other line to bashlex."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools_app.executors.shell import policy
from tools_app.executors.shell.policy import _Checker, _plain_commands


def seen(line: str) -> tuple[list[str], list[str], list[str]]:
    checker = _Checker()
    checker.line(line)
    return checker.programs, checker.hidden, checker.unparsed


def seen_by_bashlex(line: str) -> tuple[list[str], list[str], list[str]]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(policy, "_plain_commands", lambda source: None)
        return seen(line)


PLAIN = [
    "git status && ls -la src | grep py | wc -l",
    "ls",
    "ls -la;",
    "pytest -q tests/unit --maxfail=1; echo done",
    "python -m pip install -e .",
    "grep -rn TODO src || true",
    "cd src && make -j2 all",
    "git log --oneline -5 | head -n 3",
    "env -u X timeout 5 rm -r build",
    "sudo -u nobody curl http://x",
    "bash -c ls",
    "sh -c rm",
    "xargs -n1 rm",
    "find . -name x -exec rm x +",
    "find . -exec cat x ;",
    "eval rm",
    "export PATH=/tmp",
    "env PATH=/tmp ls",
    "source x",
    ". x",
    "timeout 5 -- bash -c curl",
    "watch -n 1 rm x",
    "hash -p /bin/rm ls",
    "printf -v PATH x",
    "a/b/c.sh --flag=1 x,y:z@w%v+u^t",
]

NOT_PLAIN = [
    "ls &",
    "ls |& cat",
    "ls ;; cat",
    "&& ls",
    "ls &&",
    "ls |",
    "ls || ",
    "; ls",
    "ls ; ; cat",
    "X=1 ls",
    "PATH=/tmp ls",
    "time ls",
    "if true; then ls; fi",
    "for x in a; do ls; done",
    "ls 'a b'",
    'ls "a"',
    "ls $HOME",
    "ls *.py",
    "ls ~",
    "ls > x",
    "ls # c",
    "ls\ncat",
    "ls \\\n x",
    "(ls)",
    "{ ls; }",
    "ls a{b,c}",
    "ls [ab]",
    "ls `x`",
    "! ls",
    "ls ñ",
]


@pytest.mark.parametrize("line", PLAIN)
def test_it_splits_plain_lines_as_bashlex_reads_them(line: str) -> None:
    assert _plain_commands(line) is not None
    assert seen(line) == seen_by_bashlex(line)


@pytest.mark.parametrize("line", NOT_PLAIN)
def test_it_leaves_every_other_line_to_bashlex(line: str) -> None:
    assert _plain_commands(line) is None


def test_it_splits_on_the_four_operators() -> None:
    assert _plain_commands("a -x && b || c | d ; e;") == [["a", "-x"], ["b"], ["c"], ["d"], ["e"]]


def test_a_blocked_program_in_a_plain_line_is_denied_with_the_same_words() -> None:
    for line in ("ls && rm -rf x", "env timeout 5 rm x", "bash -c rm"):
        with pytest.raises(policy.PolicyDenied) as plain:
            policy.check_command(line, allowed=["ls", "env", "timeout", "bash"], blocked=["rm"])
        with pytest.MonkeyPatch.context() as patch, pytest.raises(policy.PolicyDenied) as parsed:
            patch.setattr(policy, "_plain_commands", lambda source: None)
            policy.check_command(line, allowed=["ls", "env", "timeout", "bash"], blocked=["rm"])
        assert plain.value.reason == parsed.value.reason


_WORDS = [
    "ls", "git", "rm", "curl", "bash", "sh", "zsh", "fish", "env", "sudo", "timeout", "xargs",
    "find", "eval", "export", "source", ".", "time", "if", "then", "fi", "do", "done", "in",
    "wc", "python", "nice", "flock", "watch", "hash", "printf", "trap", "command", "exec",
    "-c", "-la", "--", "-", "-exec", "-n", "5", "-u", "-S", "-p", "-v", "status", "PATH=x",
    "X=1", "LD_PRELOAD=y", "a=b", "{}", "+", "/bin/rm", "./rm", "a/b", "x.y", "--flag=1",
]  # fmt: skip
_OPERATORS = ["&&", "||", "|", ";", "&", "|&", ";;", "&&&", "|||"]
_ODD = ["'", '"', "$X", "*", "~", "(", ")", ">", "#", "\\", "\n", "\t", "{", "}", "`", "é"]
_token = st.one_of(
    st.sampled_from(_WORDS), st.sampled_from(_WORDS), st.sampled_from(_OPERATORS),
    st.sampled_from(_ODD),
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(st.tuples(_token, st.sampled_from(["", " ", "  ", "\t"])), min_size=1))
def test_plain_or_not_the_checker_sees_what_bashlex_shows_it(parts: list[Any]) -> None:
    line = "".join(token + gap for token, gap in parts).strip() or "ls"
    assert seen(line) == seen_by_bashlex(line)
