"""Which programs a ``shell_exec`` command line would run, checked against the admin's lists.

The line is parsed with bashlex, never matched as text, and every command in it is found:
pipelines, lists (``;`` ``&&`` ``||`` ``&``, newlines), ``( )``, ``{ }``, if/for/while/until and
function bodies, ``$(...)``, backticks, ``<(...)``, redirection targets, unquoted here-documents.

* Programs are compared by basename after quote removal: ``\\rm``, ``'r'm``, ``./rm`` and
  ``/usr/bin/../bin/rm`` are all ``rm``. List entries are normalised the same way.
* A blocked program is denied wherever it is seen, even when the allowlist is empty. A blocked
  entry with arguments (``rm -rf``) is a command pattern, matched on each command's parsed
  argv (``patterns.py``).
* With an allowlist, every program (builtins such as ``cd`` and ``echo`` too) must be on it, and
  the line is denied when it cannot be parsed or when it *hides* a program: a program word made
  by an expansion (``$X``, ``$(...)``, globs, braces, ``~``), ``source``/``.``, a command string
  that is not literal (``bash -c "$X"``), a runner argument we cannot read, assignments that
  change what names run (``PATH=``, ``LD_PRELOAD=``), substitutions bashlex does not analyse
  itself (inside ``${...}`` or a here-document).
* With an empty allowlist anything goes except *visible* blocked programs: the blocklist is then
  a guard against mistakes, not a boundary (``$(printf rm)`` gets past it). The sandbox is the
  boundary either way.
* Commands that run commands are looked through: runners (``env``, ``timeout``, ``xargs``,
  ``sudo``, ``find -exec`` ...) are checked *and* so is the program they run, found by skipping
  their options; literal command strings (``bash -c '...'``, ``eval '...'``, ``watch '...'``)
  are parsed and checked like the line itself.
* The allowlist is about programs, not arguments: an allowed ``python`` may run ``python -c``,
  an allowed ``git`` may run ``git -c core.pager=... log``, an allowed ``bash`` may run a script
  file (so may ``awk``, ``sed 's/x/y/e'``, ``make``, ``tar --to-command``). What they do inside
  is the sandbox's business.

bashlex 0.18 cannot parse ``case``, ``[[ ]]``, ``$((...))``, ``select``, ``coproc`` or the ``time``
keyword: such lines "cannot be parsed" (so ``\\time``/``/usr/bin/time`` is the way to time).
"""

from __future__ import annotations

import contextlib
import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import bashlex
import bashlex.heredoc

from tools_app.errors import PolicyDenied
from tools_app.executors.shell.patterns import is_pattern, patterns_of

_MAX_DEPTH = 8  # nested `bash -c "eval '...'"` levels before the inner text counts as hidden
# Assigning these changes which program a name runs, or injects code into every program.
_RESOLUTION_VARS = frozenset({"PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4"})
_RESOLUTION_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Builtins whose arguments name the variables they assign (`export PATH=.`, `read PATH`).
_ASSIGNING = frozenset({"export", "declare", "typeset", "local", "readonly", "read", "mapfile"})
_SHELLS = frozenset({"sh", "bash", "rbash", "dash", "ash", "ksh", "mksh", "lksh", "zsh", "yash"})
_FOREIGN_SHELLS = frozenset({"fish", "csh", "tcsh"})  # their -c code is not bash syntax
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_CLOSERS = {"(": ")", "{": "}"}


class _Runner(NamedTuple):
    """How a command that runs another command reads its own arguments."""

    values: str = ""  # options taking a value (attached or the next word)
    code_options: str = ""  # options whose value is a command line (env -S, flock -c)
    operands: int = 0  # operands before the command (timeout's DURATION, chroot's NEWROOT)
    code: str = ""  # "joined"/"first": the rest is shell text, not a program and its args


# Value-taking options come from each tool's manual: a missing one would make its value look
# like the program. Flags need no listing. env and sudo also accept NAME=VALUE words.
_RUNNERS: dict[str, _Runner] = {
    "env": _Runner("-u --unset -C --chdir", "-S --split-string"),
    "sudo": _Runner(
        "-C -D -g -p -R -r -T -t -U -u --close-from --chdir --group --prompt --chroot --role"
        " --command-timeout --type --other-user --user"
    ),
    "doas": _Runner("-C -u"),
    "exec": _Runner("-a"),
    **dict.fromkeys(("command", "builtin", "nohup", "setsid", "busybox"), _Runner()),
    "nice": _Runner("-n --adjustment"),
    "timeout": _Runner("-k -s --kill-after --signal", operands=1),
    "time": _Runner("-f -o --format --output"),
    "stdbuf": _Runner("-i -o -e --input --output --error"),
    "xargs": _Runner(
        "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs --max-chars"
        " --process-slot-var"
    ),
    "chroot": _Runner("--userspec --groups", operands=1),
    "unshare": _Runner(
        "-S -G -R -w --setuid --setgid --root --wd --propagation --setgroups --map-user"
        " --map-group --map-users --map-groups"
    ),
    "flock": _Runner("-w -E --timeout --conflict-exit-code", "-c --command", operands=1),
    "ionice": _Runner("-c -n -p -P -u --class --classdata --pid --pgid --uid"),
    "taskset": _Runner(operands=1),
    "strace": _Runner("-a -b -e -E -I -o -O -p -P -s -S -u -X"),
    "eval": _Runner(code="joined"),
    "trap": _Runner(code="first"),
    "watch": _Runner("-n -q --interval --equexit", code="joined"),  # runs `sh -c "ARGS"`
    "parallel": _Runner("-j -S -I -a --jobs --sshlogin --arg-file", code="joined"),
}


@dataclass(frozen=True)
class CommandCheck:
    """What ``check_command`` saw, for the trace: every program in the order found (the
    programs of a substitution come before the command that uses its output)."""

    programs: list[str]


def check_command(command: str, *, allowed: Sequence[str], blocked: Sequence[str]) -> CommandCheck:
    """Check every program ``command`` would run; raise ``PolicyDenied`` naming the first problem:
    a blocked program, then (allowlist set) a parse failure, a hidden program, a program not on
    the allowlist."""
    allow = _names(allowed)
    block = _names(b for b in blocked if not is_pattern(b))
    patterns = patterns_of(blocked)
    if _is_blank(command):
        raise PolicyDenied("the command is empty")
    seen = _Checker()
    seen.line(command)
    for name in seen.programs:
        if name in block:
            raise PolicyDenied(f"command {_show(name)} is blocked")
    for name, argv in seen.commands:
        for pattern in (p for p in patterns if p.program == name):
            if pattern.matches(name, [w.text for w in argv if w.static]):
                raise PolicyDenied(f"command {_show(pattern.text)} is blocked")
            # `rm $FLAGS x`, `rm {-r,-f} x`: the pattern's options may be in what cannot be
            # read. A glob that cannot start with "-" (`rm *.log`) may stay.
            unread = next((w for w in argv if not w.static and not _plain_glob(w)), None)
            if unread is not None:
                raise PolicyDenied(
                    f"command {_show(name)} has an argument hidden by {unread.why} "
                    f"({_show(unread.raw)}), and {_show(pattern.text)} is blocked"
                )
    if allow:
        suffix = " — not allowed while an allowlist is set"
        if seen.unparsed:
            raise PolicyDenied(f"cannot parse the command line: {seen.unparsed[0]}{suffix}")
        if seen.hidden:
            raise PolicyDenied(seen.hidden[0] + suffix)
        for name in seen.programs:
            if name not in allow:
                raise PolicyDenied(
                    f"command {_show(name)} is not in the allowed commands ({', '.join(allow)})"
                )
    return CommandCheck(programs=seen.programs)


def command_programs(command: str) -> tuple[list[str], list[str]]:
    """The programs ``command`` would run, read as ``check_command`` reads them (in the order
    found), and what could not be read (hidden constructs, parse failures): an approval's
    preview shows both."""
    seen = _Checker()
    seen.line(command)
    return seen.programs, [*seen.hidden, *seen.unparsed]


def split_argv(command: str) -> list[str]:
    """Split a simple command into argv the way a POSIX shell splits words, expanding nothing.

    For tools that exec without a shell, where ``;``, ``|`` and ``$X`` are plain characters.
    Raises ``ValueError`` on unbalanced quotes or a trailing backslash.
    """
    return shlex.split(command, comments=False, posix=True)


def _plain_glob(word: _Word) -> bool:
    return word.why == "a glob pattern" and not word.text.startswith("-")


def _names(entries: Iterable[str]) -> list[str]:
    # a dict keeps the admin's order for messages and drops duplicates
    return list(dict.fromkeys(n for n in (_basename(e.strip()) for e in entries) if n))


def _basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _is_blank(source: str) -> bool:
    # only blanks and comments: nothing runs (and bashlex fails on such input)
    lines = (line.lstrip(" \t") for line in source.split("\n"))
    return all(not line or line.startswith("#") for line in lines)


def _show(text: str) -> str:
    return json.dumps(text if len(text) <= 60 else text[:57] + "...", ensure_ascii=False)


def _dangerous_var(text: str) -> str:
    """The variable ``text`` (``NAME`` or ``NAME=value``) names, if assigning it is dangerous."""
    match = _VAR_NAME.match(text)
    name = match.group() if match else ""
    return name if name in _RESOLUTION_VARS or name.startswith(_RESOLUTION_PREFIXES) else ""


def _parse_error(exc: Exception) -> str:
    message = str(exc)
    if isinstance(exc, NotImplementedError):  # e.g. "type = {time command}, token = {time}"
        found = re.search(r"type = \{([^}]*)\}", message)
        what = found.group(1) if found else message
        return f"unsupported shell syntax ({'case' if what == 'pattern' else what})"
    return message[:200] or type(exc).__name__


class _Checker:
    """Walks bashlex trees and collects programs, hidden constructs and parse failures."""

    def __init__(self) -> None:
        self.programs: list[str] = []
        self.hidden: list[str] = []
        self.unparsed: list[str] = []
        # Each command's program (basename) and arguments, for the deny list's patterns.
        self.commands: list[tuple[str, list[_Word]]] = []

    def line(self, source: str, depth: int = 0) -> None:
        if depth > _MAX_DEPTH:
            self.hidden.append("commands are nested too deeply to check")
            return
        if _is_blank(source):
            return
        plain = _plain_commands(source)
        if plain is not None:  # words and && || | ; only: no parser needed (see there)
            for words in plain:
                self._run([_Word(w, text=w) for w in words], depth)
            return
        # bashlex needs a newline after a here-document's end line; bash does not care
        src = source if source.endswith("\n") else source + "\n"
        try:
            trees = bashlex.parse(src)
        except Exception as exc:  # ParsingError, NotImplementedError, and worse on odd input
            self.unparsed.append(_parse_error(exc))
            return
        try:
            for tree in trees:
                self._node(tree, src, depth)
        except RecursionError:  # absurd nesting that bashlex still managed to parse
            self.unparsed.append("the command line is nested too deeply")

    def _node(self, node: Any, src: str, depth: int) -> None:
        kind = node.kind
        if kind == "command":
            self._command(node, src, depth)
        elif kind in ("word", "assignment"):  # for-loop lists, function names
            self._word(node, src, depth)
        elif kind == "redirect":
            self._redirect(node, src, depth)
        elif kind in ("list", "pipeline", "if", "for", "while", "until", "function", "compound"):
            if kind == "for" and (var := _dangerous_var(node.parts[1].word)):
                self.hidden.append(f"the for loop assigns {var}, which changes what names run")
            if kind == "compound":
                children = [*node.list, *getattr(node, "redirects", [])]
            else:
                children = node.parts
            for child in children:
                self._node(child, src, depth)
        elif kind not in ("reservedword", "operator", "pipe", "parameter", "tilde", "heredoc"):
            self.unparsed.append(f"unexpected shell construct ({kind})")  # fail closed

    def _command(self, node: Any, src: str, depth: int) -> None:
        argv: list[_Word] = []
        for part in node.parts:
            if part.kind == "redirect":
                self._redirect(part, src, depth)
            elif part.kind == "assignment" and not argv:  # `X=1 prog`, or a bare assignment
                self._word(part, src, depth)
                self._assignment(part.word, "")
            elif part.kind in ("word", "assignment"):
                argv.append(self._word(part, src, depth))
            else:
                self._node(part, src, depth)
        if argv:
            self._run(argv, depth)

    def _word(self, node: Any, src: str, depth: int) -> _Word:
        raw = src[node.pos[0] : node.pos[1]]
        parsed = [p for p in getattr(node, "parts", []) if p.kind.endswith("substitution")]
        for part in parsed:
            self._node(part.command, src, depth)
        try:
            word = _scan(raw)
        except ValueError as exc:
            self.hidden.append(f"the quoting of {_show(raw)} cannot be analysed ({exc})")
            return _Word(raw, why="quoting that cannot be analysed")
        if len(word.substitutions) != len(parsed):  # bashlex misses some, e.g. in 'a'$(cmd)'b'
            reason = f"a command substitution in {_show(raw)} could not be analysed"
            self._hide_code(word.substitutions, reason, depth)
        if word.nested:
            reason = f"a command substitution inside ${{...}} in {_show(raw)} is not analysed"
            self._hide_code(word.nested, reason, depth)
        return word

    def _redirect(self, node: Any, src: str, depth: int) -> None:
        if node.type not in ("<<", "<<-"):
            if isinstance(node.output, bashlex.ast.node):  # not `2>&1`
                target = self._word(node.output, src, depth).text
                if target.startswith(("/dev/tcp/", "/dev/udp/")):  # bash opens a socket itself
                    self.hidden.append(f"redirecting to {_show(target)} opens a network connection")
            return
        delimiter = src[node.output.pos[0] : node.output.pos[1]]
        if node.heredoc is None or any(q in delimiter for q in "'\"\\"):
            return  # a quoted delimiter keeps the body literal
        reason = (
            "a command substitution inside a here-document is not analysed"
            " (quote the delimiter, <<'EOF', to keep the text literal)"
        )
        try:
            body = _scan(node.heredoc.value, heredoc=True)
        except ValueError:
            self.hidden.append(reason)
            return
        if body.substitutions or body.nested:
            self._hide_code(body.substitutions + body.nested, reason, depth)

    def _hide_code(self, bodies: list[str], reason: str, depth: int) -> None:
        """Record a hidden construct, and still look inside: visible blocked programs count."""
        self.hidden.append(reason)
        for body in bodies:
            inner = _Checker()
            inner.line(body, depth + 1)
            self.programs += inner.programs
            self.commands += inner.commands

    def _assignment(self, text: str, via: str) -> None:
        if var := _dangerous_var(text):
            by = f" by {via}" if via else ""
            self.hidden.append(f"assigning {var}{by} changes which program a name runs")

    def _run(self, argv: list[_Word], depth: int) -> None:
        program, args = argv[0], argv[1:]
        name = _basename(program.text)
        if not program.static:
            self.hidden.append(f"the program name {_show(program.raw)} is hidden by {program.why}")
            if re.fullmatch(r"[\w.+-]+", name):  # `~/rm`, `$DIR/rm`: a blocked rm still shows
                self.programs.append(name)
                self.commands.append((name, args))
            return
        if not name:
            self.hidden.append(f"the program name {_show(program.raw)} is empty")
            return
        self.programs.append(name)
        self.commands.append((name, args))
        if name in _SHELLS or name in _FOREIGN_SHELLS:
            self._shell(name, args, depth)
        elif name in _RUNNERS:
            self._runner(name, args, depth)
        elif name == "find":
            self._find(args, depth)
        elif name in ("source", "."):
            self.hidden.append(f'"{name}" runs the commands in a file, which cannot be checked')
        elif name == "hash" and any(a.text.startswith("-") and "p" in a.text for a in args):
            self.hidden.append('"hash -p" maps a command name to another program')
        elif name in _ASSIGNING or name in ("readarray", "printf"):  # printf -v NAME
            for arg in args:
                self._assignment(arg.text, name)

    def _code(self, runner: str, words: list[_Word], depth: int) -> None:
        """Check shell text that a runner executes (``bash -c``, ``eval``, ``env -S``)."""
        text = " ".join(w.text for w in words)
        unreadable = next((w for w in words if not w.static), None)
        if unreadable is None:
            self.line(text, depth + 1)
        else:
            where = f"{unreadable.why} in {_show(unreadable.raw)}"
            self._hide_code([text], f"the command run by {runner} is hidden by {where}", depth)

    def _runner(self, name: str, args: list[_Word], depth: int) -> None:
        spec = _RUNNERS[name]
        takes, code_options = spec.values.split(), spec.code_options.split()
        i, operands = 0, spec.operands
        while i < len(args):
            word = args[i]
            if not word.static:  # an option, an operand or the program: cannot tell which
                where = f"{word.why} in {_show(word.raw)}"
                self.hidden.append(f"the program run by {name} is hidden by {where}")
                return
            text = word.text
            if text == "--":
                i += 1 + operands
                break
            if text.startswith("-") and (text != "-" or name == "env"):  # `env -` is `env -i`
                option, attached = _value_option(text, takes + code_options)
                value = _Word(attached or "", text=attached or "")
                if option and attached is None and i + 1 < len(args):
                    i += 1
                    value = args[i]
                if option in code_options:
                    self._code(name, [value], depth)
            elif name in ("env", "sudo") and "=" in text and _VAR_NAME.match(text):
                self._assignment(text, name)
            elif operands:  # GNU tools take options after operands too (flock FILE -c CMD)
                operands -= 1
            else:
                break
            i += 1
        rest = args[i:]
        if rest and not spec.code:
            self._run(rest, depth)
        elif rest:
            self._code(name, rest if spec.code == "joined" else rest[:1], depth)

    def _shell(self, name: str, args: list[_Word], depth: int) -> None:
        i, has_c = 0, False
        while i < len(args):
            word = args[i]
            if not word.static:
                if not has_c:  # it could be -c
                    self.hidden.append(f"the options of {name} are hidden by {word.why}")
                break
            text = word.text
            if text in ("-", "--"):
                i += 1
                break
            if text.startswith("--"):  # --norc, --login ...; two of them take a file
                i += 2 if text in ("--rcfile", "--init-file") else 1
                continue
            if len(text) < 2 or text[0] not in "-+":
                break
            has_c = has_c or (text[0] == "-" and "c" in text)
            i += 2 if text[-1] in "oO" else 1  # -o NAME, -O NAME
        if not has_c or i >= len(args):
            return  # runs a script file or stdin: an allowed shell may, like an allowed python
        if name in _FOREIGN_SHELLS:
            self.hidden.append(f"{name} -c runs {name} code, which cannot be checked")
        else:
            self._code(name, args[i : i + 1], depth)

    def _find(self, args: list[_Word], depth: int) -> None:
        i = 0
        while i < len(args):
            word = args[i]
            if not word.static:
                where = f"{_show(word.raw)} is hidden by {word.why}"
                self.hidden.append(f"the find argument {where} and could make find run a program")
            elif word.text in _FIND_EXEC:
                ends = (j for j in range(i + 1, len(args)) if args[j].text in (";", "+"))
                end = next(ends, len(args))
                inner = args[i + 1 : end]
                if inner and inner[0].text == "{}":
                    self.hidden.append(f"find {word.text} {{}} runs the files it finds")
                elif inner:
                    self._run(inner, depth)
                i = end
            i += 1


def _plain_commands(source: str) -> list[list[str]] | None:
    """The commands of a line made only of plain words joined by ``&&`` ``||`` ``|`` ``;``
    (``git status && ls -la src | wc -l``), or None when bash's reading of it needs a parser.

    Most lines a model sends are such lines, and bashlex takes about 0.3 ms to parse one (most
    of a ``shell_exec`` binding). Splitting them needs no parser: outside the characters below
    bash has nothing to expand or quote (no ``$ ` ' " \\``, globs, braces, ``~``, redirections,
    parentheses, comments, newlines), and the only operators left are the four. Anything else
    (a lone ``&``, ``|&``, ``;;``, an empty command, a reserved word or an assignment where a
    command starts) goes to bashlex, as every line did before. ``tests/tools/shell/
    test_policy_plain.py`` checks that both ways give the same answer."""
    if not _PLAIN_LINE.fullmatch(source):
        return None
    commands: list[list[str]] = []
    words: list[str] = []
    last = ""
    for part in _PLAIN_TOKEN.findall(source):
        if part in _PLAIN_OPERATORS:
            if not words:
                return None  # an operator with no command before it: a syntax error
            commands.append(words)
            words, last = [], part
        elif part == "&":
            return None  # a background job, or |&
        else:
            words.append(part)
    if words:
        commands.append(words)
    elif last != ";":
        return None  # ends in && || or |: bash would wait for more
    for command in commands:
        if "=" in command[0] or command[0] in _RESERVED_WORDS:
            return None
    return commands


# What ``_plain_commands`` splits without a parser: ASCII letters and digits, blanks, the
# punctuation below, which bash never expands in a word, and the operators' characters.
_PLAIN_LINE = re.compile(r"[A-Za-z0-9_\-./,:@%+=^ \t|&;]+")
_PLAIN_TOKEN = re.compile(r"&&|\|\||[|;&]|[^ \t|&;]+")
_PLAIN_OPERATORS = frozenset({"&&", "||", "|", ";"})
_RESERVED_WORDS = frozenset(
    {"if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until"}
    | {"do", "done", "in", "function", "time", "coproc"}
)


def _value_option(text: str, takes: list[str]) -> tuple[str, str | None]:
    """The value-taking option in an option word, and its attached value if any."""
    if text.startswith("--"):
        option, eq, value = text.partition("=")
        return (option, value if eq else None) if option in takes else ("", None)
    for k in range(1, len(text)):  # a cluster like -0n1: the first value option takes the rest
        if f"-{text[k]}" in takes:
            return f"-{text[k]}", text[k + 1 :] or None
    return "", None


@dataclass
class _Word:
    """One shell word as bash reads it, with nothing expanded."""

    raw: str
    text: str = ""  # quotes removed, expansions kept as written
    why: str = ""  # the first expansion that stops the word being static, e.g. "a variable"
    substitutions: list[str] = field(default_factory=list)  # bodies of $( ), ` `, <( ), >( )
    nested: list[str] = field(default_factory=list)  # bodies bashlex skips (inside ${...})

    @property
    def static(self) -> bool:
        return not self.why


def _scan(raw: str, *, heredoc: bool = False) -> _Word:
    """Read one word (or an unquoted here-document body) and note each expansion in it.

    Independent of bashlex, whose quote removal has gaps: a program name or a ``bash -c``
    string must be known exactly. Raises ``ValueError`` on quoting it cannot follow.
    """
    word, out, i = _Word(raw), [], 0
    dquoted = heredoc  # a here-document body follows double-quote rules, minus the quotes

    def note(why: str) -> None:
        word.why = word.why or why

    while i < len(raw):
        c, nxt, end = raw[i], raw[i + 1 : i + 2], -1
        if c == "\\" and (nxt == "\n" or not dquoted or nxt in '$`"\\'):
            out.append(nxt if nxt != "\n" else "")  # backslash-newline joins lines
            i += 2
            continue
        if c == "'" and not dquoted:
            end = raw.find("'", i + 1)
            if end < 0:
                raise ValueError("unbalanced single quote")
            out.append(raw[i + 1 : end])
            i = end + 1
            continue
        if c == '"' and not heredoc:
            dquoted = not dquoted
            i += 1
            continue
        if c == "$" and nxt == '"' and not dquoted:  # $"..." is a translatable "..."
            i += 1
            continue
        if c == "`":
            end = _quote_end(raw, i, "`")
            body = raw[i + 1 : end]
            word.substitutions.append(body)
            if "\\`" in body:  # bash unescapes nested backticks before parsing, bashlex does not
                word.nested.append(body.replace("\\`", "`"))
            note("a command substitution (`...`)")
        elif c == "$" and nxt == "(":
            end = _closing(raw, i + 2, "(")
            word.substitutions.append(raw[i + 2 : end])
            note("a command substitution ($(...))")
        elif c == "$" and nxt == "{":
            end = _closing(raw, i + 2, "{", squotes=not dquoted)
            inner = _scan(raw[i + 2 : end], heredoc=dquoted)  # "${x:-it's}" is fine
            word.nested += inner.substitutions + inner.nested
            note("a variable (${...})")
        elif c == "$" and nxt == "'" and not dquoted:
            end = _quote_end(raw, i + 1, "'")
            note("ANSI-C quoting ($'...')")
        elif c == "$" and nxt and (nxt.isalnum() or nxt in "_@*#?$!-"):
            note("a variable")
        elif c in "<>" and nxt == "(" and not dquoted:
            end = _closing(raw, i + 2, "(")
            word.substitutions.append(raw[i + 2 : end])
            note("a process substitution (<(...))")
        elif not dquoted and (c in "*?" or (c == "[" and "]" in raw[i + 1 :])):
            note("a glob pattern")
        elif not dquoted and c == "{" and re.match(r"\{[^}]*(,|\.\.)[^}]*\}", raw[i:]):
            note("brace expansion")
        elif not dquoted and c == "~" and i == 0:
            note("tilde expansion")
        out.append(raw[i : end + 1] if end >= 0 else c)  # expansions are kept as written
        i = end + 1 if end >= 0 else i + 1
    if dquoted and not heredoc:
        raise ValueError("unbalanced double quote")
    word.text = "".join(out)
    return word


def _quote_end(raw: str, start: int, quote: str) -> int:
    """Index of the unescaped ``quote`` that closes the one at ``start``."""
    i = start + 1
    while i < len(raw):
        if raw[i] == quote:
            return i
        i += 2 if raw[i] == "\\" else 1
    raise ValueError(f"unbalanced {quote}")


def _closing(raw: str, i: int, opener: str, *, squotes: bool = True) -> int:
    """Index of the bracket closing ``opener`` (``(``, ``{``, or ``"`` for the end of a
    double-quoted string) that ends just before ``i``, skipping quoted and nested text.
    ``squotes=False``: single quotes are plain characters (``${...}`` inside double quotes)."""
    closer, depth, quoted = _CLOSERS.get(opener, opener), 1, opener == '"'
    squotes = squotes and not quoted
    while i < len(raw):
        c = raw[i]
        if c == "\\":
            i += 1
        elif quoted and c == '"':
            return i
        elif c == "'" and squotes:
            i = raw.find("'", i + 1)  # no escapes inside single quotes
            if i < 0:
                break
        elif c == '"':
            i = _closing(raw, i + 1, '"')
        elif c == "`":
            i = _quote_end(raw, i, "`")
        elif c == "#" and opener == "(" and (i == 0 or raw[i - 1] in " \t\n;&|("):
            i = raw.find("\n", i)  # a comment inside $(...): its ")" does not count
            if i < 0:
                break
        elif c == "$" and raw[i + 1 : i + 2] in _CLOSERS:  # $( ) starts afresh, ${ } does not
            i = _closing(raw, i + 2, raw[i + 1], squotes=squotes or raw[i + 1] == "(")
        elif c == opener and not quoted:
            depth += 1
        elif c == closer and not quoted:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError(f"no closing {closer!r}")


def _fix_quoted_heredoc_delimiters() -> None:
    """bashlex 0.18 looks for a here-document's end line *with* the delimiter's quotes, so
    ``cat <<'EOF'`` (the usual way to write a file) never ends and the line fails to parse.
    Wrap its reader to compare the quote-removed delimiter, as bash does."""
    original = bashlex.heredoc.makeheredoc
    if getattr(original, "unquotes_delimiter", False):
        return

    def makeheredoc(tokenizer: Any, redirnode: Any, lineno: int, killleading: bool) -> Any:
        delimiter = redirnode.output.word
        with contextlib.suppress(ValueError):  # odd quoting: leave it to bashlex to report
            redirnode.output.word = _scan(delimiter).text
        try:
            return original(tokenizer, redirnode, lineno, killleading)
        finally:
            redirnode.output.word = delimiter

    makeheredoc.unquotes_delimiter = True  # type: ignore[attr-defined]
    bashlex.heredoc.makeheredoc = makeheredoc


_fix_quoted_heredoc_delimiters()
